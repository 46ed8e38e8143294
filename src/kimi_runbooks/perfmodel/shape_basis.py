"""What validates the shape of a plan the calibration was not fitted on as such: pipeline stages,
several nodes, prefill and decode pools.

The calibration fits efficiencies on published runs, nearly all single-node tensor-parallel; a
plan with pp > 1, a tp group across nodes or PD pools adds terms (pipeline bubbles, stage
transfers, KV transfer, each pool's limit) that only a published result of that shape can check.
`shape_basis` names that result (params/references whose `launch` or `stack` has the same pp and
node count, or whose rows name the same PD deployment), says whether the fit saw it, and says
plainly when nothing published does.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._deps import LaunchPlan, Reference, load_catalog
from .serving import Serving
from .store import UNVALIDATED_SHAPE_BAND_WIDENING, Calibration


def _field(ref: Reference, *names: str) -> Any:
    """A key of a reference's `stack` or `launch` block (Reference keeps unknown keys as extras)."""
    for block in ("stack", "launch"):
        values = getattr(ref, block, None) or {}
        for name in names:
            if isinstance(values, dict) and values.get(name) is not None:
                return values[name]
    return None


def describe(serving: Serving) -> str:
    """'tp 8 x pp 2 over 2 nodes' or 'PD: prefill tp 16 on 1 node, decode tp 16 on 1 node'."""

    def one(p: Any) -> str:
        pp = f" x pp {p.pp}" if p.pp > 1 else ""
        nodes = f"{p.nodes} node{'s' if p.nodes > 1 else ''}"
        return f"tp {p.tp}{pp} on {nodes}"

    if serving.disaggregated:
        return "PD: " + ", ".join(f"{p.role} {one(p)}" for p in serving.pools)
    return one(serving.pools[0])


def _network(plan: LaunchPlan) -> str:
    hw = plan.platform.hardware
    source = hw.sources.get("inter_node_gbs", "no source")
    return f"{hw.inter_node_gbs:g} GB/s per device between nodes (params/platforms/{plan.platform.id}.yaml: {source})"


class ShapeBasis(NamedTuple):
    text: str
    """'' for a single-node tp plan; else what validates the shape, or that nothing measured does."""
    measured: bool
    """A published measurement of this shape exists (fitted or compared only); True for single node."""

    @property
    def band_widening(self) -> float:
        return 1.0 if self.measured else UNVALIDATED_SHAPE_BAND_WIDENING


def shape_basis(plan: LaunchPlan, serving: Serving, calibration: Calibration) -> ShapeBasis:
    """Empty text for a single-node plan without pipeline stages; else which published result
    validates the shape (fitted, or compared only) or 'nothing published validates this shape', and
    which of the model's terms that leaves unchecked."""
    pp = max(p.pp for p in serving.pools)
    nodes = max(p.nodes for p in serving.pools)
    if pp == 1 and nodes == 1 and not serving.disaggregated:
        return ShapeBasis("", measured=True)
    catalog = load_catalog()
    deployment = plan.deployment.id if plan.deployment is not None else None
    measured, ceilings = [], []
    for ref in catalog.references.values():
        if ref.platform != plan.platform.id or ref.kind == "accuracy":
            continue
        if deployment is not None:
            rows = [r for r in getattr(ref, "rows", None) or [] if r.get("deployment") == deployment]
            if rows and ref.kind == "targets":
                ceilings.append(f"{ref.id} ({', '.join(_ceiling(r) for r in rows)}; {ref.source})")
            elif rows:
                measured.append(ref)
            continue
        ref_nodes = _field(ref, "nnodes", "nodes")
        if int(_field(ref, "pp", "pp_size") or 1) != pp:
            continue
        # a pipelined run that does not record its node count still checks the pipeline terms
        if (ref_nodes is None and pp > 1) or (ref_nodes is not None and int(ref_nodes) == nodes):
            measured.append(ref)
    terms = _terms(serving)
    shape = describe(serving)
    if measured:
        named = "; ".join(
            f"{r.id} ({'fitted' if r.id in calibration.references else 'never fitted, compared only'}; {r.source})"
            for r in measured
        )
        return ShapeBasis(f"shape {shape}: validated by {named}. First-principles terms: {terms}", measured=True)
    widened = f"band widened x{UNVALIDATED_SHAPE_BAND_WIDENING:g} on top of any widening above"
    if ceilings:
        return ShapeBasis(
            f"shape {shape}: only published SLO ceilings, never a measurement: {'; '.join(ceilings)}. "
            f"Nothing measured validates this shape ({widened}); first-principles terms: {terms}",
            measured=False,
        )
    return ShapeBasis(
        f"shape {shape}: nothing published validates this shape ({widened}). First-principles terms: {terms}; "
        f"{_network(plan)}",
        measured=False,
    )


def _ceiling(row: dict[str, Any]) -> str:
    got = [f"{k.removesuffix('_ms').upper()} <= {v:g} ms" for k, v in row.items() if k in ("tpot_ms", "ttft_ms") and v]
    return ", ".join(got) or "no figure"


def _terms(serving: Serving) -> str:
    out = []
    if any(p.pp > 1 for p in serving.pools):
        out.append("pipeline bubbles and stage-boundary activations (perfmodel/pipeline.py)")
    if any(p.spans_nodes for p in serving.pools):
        out.append("tp collectives across nodes")
    if serving.disaggregated:
        out.append("KV transfer prefill -> decode over one NIC, each pool's throughput limit")
    return ", ".join(out) or "none"
