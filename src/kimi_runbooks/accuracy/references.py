"""Published accuracy (params/references, kind: accuracy) next to a run's rows.

Joined on (suite, metric), among the references that apply to the served model (``for_model``: its
own, else those not marked ``model_only``). A smoke run's metric may differ from the published one only by its
sample count (``pass_at_1_avg1`` vs ``pass_at_1_avg32``): those join on the metric family and are
flagged ``k_differs``. Counts are turned into rates over their n before comparing; Wilson 95%
intervals are given where n is known. Every row says whether the run was emulated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ..catalog import load_catalog
from ..origin import source_label
from .common import EvalRow

SOURCE_EMULATED = source_label(True, upper=True)
SOURCE_REHEARSAL = source_label(False, upper=True, rehearsal=True)


def reference_results(catalog: Any | None = None) -> list[dict[str, Any]]:
    """Every published accuracy result entry: suite, tool, command, settings, metrics + its file."""
    catalog = catalog or load_catalog()
    out = []
    for ref in catalog.references.values():
        if ref.kind != "accuracy":
            continue
        for entry in getattr(ref, "results", None) or []:
            out.append(
                {
                    **entry,
                    "reference_id": ref.id,
                    "platform": ref.platform,
                    "model": ref.model,
                    "model_only": bool(getattr(ref, "model_only", False)),
                    "reference_source": ref.source,
                    "fail_drop": getattr(ref, "fail_drop", None),
                }
            )
    return out


def model_id(name: str | None, catalog: Any | None = None) -> str | None:
    """The params/models id of a served name, checkpoint or id (None when no entry is that model)."""
    if not name:
        return None
    catalog = catalog or load_catalog()
    for model in catalog.models.values():
        if name in (model.id, model.hf_id, model.served_name):
            return str(model.id)
    return None


def for_model(entries: list[dict[str, Any]], model: str | None, catalog: Any | None = None) -> list[dict[str, Any]]:
    """The entries that apply to ``model`` (a served name or id): its own when it has any, else those
    of the references not marked ``model_only`` (a parameter set published for one model, such as the
    Kimi Vendor Verifier's Kimi-K3 set, never stands in for another model's)."""
    mid = model_id(model, catalog)
    own = [e for e in entries if mid is not None and e["model"] == mid]
    return own or [e for e in entries if not e.get("model_only")]


def reference_entry(
    suite: str, reference_id: str | None = None, catalog: Any | None = None, model: str | None = None
) -> dict[str, Any]:
    """The published entry for ``suite``: the one in ``reference_id``, else the served ``model``'s own
    (for_model), else the first that applies to any model."""
    entries = [e for e in reference_results(catalog) if e["suite"] == suite]
    if reference_id is not None:
        entries = [e for e in entries if e["reference_id"] == reference_id]
    else:
        entries = for_model(entries, model, catalog)
    if entries:
        return entries[0]
    raise KeyError(f"no published accuracy result for suite {suite!r} in params/references")


def reference_frame(catalog: Any | None = None) -> pd.DataFrame:
    """One row per published metric: suite, metric, value, n, kind, rate, note, reference_id, source."""
    rows = []
    for entry in reference_results(catalog):
        for metric, spec in (entry.get("metrics") or {}).items():
            value, n = spec.get("value"), spec.get("n")
            kind = "count" if isinstance(value, int) and not isinstance(value, bool) and n else "rate"
            if metric.endswith("_s") or "throughput" in metric:
                kind = "value"
            rows.append(
                {
                    "suite": entry["suite"],
                    "metric": metric,
                    "value": value,
                    "n": n,
                    "kind": kind,
                    "rate": _rate(value, n, kind),
                    "note": spec.get("note"),
                    "reference_id": entry["reference_id"],
                    "tool": entry.get("tool"),
                    "source": f"reference: {entry['reference_source']}",
                    "fail_drop": entry.get("fail_drop"),
                    "model": entry["model"],
                    "model_only": entry["model_only"],
                }
            )
    return pd.DataFrame(rows)


def _refs_for(refs: pd.DataFrame, suite: str, model: str | None) -> pd.DataFrame:
    """The reference rows of ``suite`` that apply to the served ``model`` (for_model's rule)."""
    rows = refs[refs.suite == suite]
    if rows.empty or "model" not in rows.columns:
        return rows
    mid = model_id(model)
    own = rows[rows["model"] == mid] if mid is not None else rows.iloc[0:0]
    if not own.empty:
        return own
    return rows[~rows["model_only"].fillna(False).astype(bool)] if "model_only" in rows.columns else rows


def wilson(p: float | None, n: int | None, z: float = 1.96) -> tuple[float | None, float | None]:
    """Wilson score interval of a proportion p over n trials; (None, None) when n is unknown."""
    if p is None or not n or n <= 0 or not (0.0 <= p <= 1.0):
        return None, None
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _rate(value: Any, n: Any, kind: str) -> float | None:
    if value is None:
        return None
    if kind == "count":
        return float(value) / n if n else None
    if kind == "rate":
        return float(value)
    return None


_FAMILY = re.compile(r"(avg|at_)(\d+)$")


def metric_family(metric: str) -> str:
    """``pass_at_1_avg32`` -> ``pass_at_1_avg*``; ``majority_at_4`` -> ``majority_at_*``."""
    return _FAMILY.sub(lambda m: m.group(1) + "*", metric)


def compare(rows: Sequence[EvalRow] | Iterable[dict[str, Any]], references: pd.DataFrame | None = None) -> pd.DataFrame:
    """Run rows joined to published metrics: value, rate, Wilson interval, delta (run - reference)."""
    refs = reference_frame() if references is None else references
    recs = [r if isinstance(r, EvalRow) else EvalRow.model_validate(r) for r in rows]
    out = []
    for r in recs:
        if r.status != "ok":
            continue
        ref_suite = (r.settings or {}).get("reference_suite", r.suite)
        suite_refs = _refs_for(refs, ref_suite, (r.settings or {}).get("model")) if len(refs) else refs
        match = suite_refs[suite_refs.metric == r.metric] if len(suite_refs) else suite_refs
        k_differs = False
        if len(suite_refs) and match.empty:
            fam = metric_family(r.metric)
            match = suite_refs[suite_refs.metric.map(metric_family) == fam]
            k_differs = not match.empty
        rate = _rate(r.value, r.n, r.kind)
        lo, hi = wilson(rate, r.n) if r.kind in ("rate", "count") else (None, None)
        base = {
            "suite": r.suite,
            "ref_suite": ref_suite,
            "metric": r.metric,
            "value": r.value,
            "n": r.n,
            "kind": r.kind,
            "rate": rate,
            "ci_low": lo,
            "ci_high": hi,
            "stderr": r.stderr,
            "tool": r.tool,
            "tool_version": r.tool_version,
            "source": source_label(r.emulated, upper=True, rehearsal=r.rehearsal),
            "published_settings": bool((r.settings or {}).get("published")),
        }
        if match.empty:
            out.append(
                {
                    **base,
                    "ref_metric": None,
                    "ref_value": None,
                    "ref_n": None,
                    "ref_rate": None,
                    "ref_ci_low": None,
                    "ref_ci_high": None,
                    "delta": None,
                    "k_differs": False,
                    "reference_id": None,
                    "ref_tool": None,
                    "fail_drop": None,
                }
            )
            continue
        ref = match.iloc[0]
        ref_n = None if pd.isna(ref["n"]) else int(ref["n"])
        rlo, rhi = wilson(ref["rate"], ref_n) if ref["rate"] is not None and not pd.isna(ref["rate"]) else (None, None)
        delta = (
            rate - ref["rate"] if rate is not None and ref["rate"] is not None and not pd.isna(ref["rate"]) else None
        )
        out.append(
            {
                **base,
                "ref_metric": ref["metric"],
                "ref_value": ref["value"],
                "ref_n": ref_n,
                "ref_rate": ref["rate"],
                "ref_ci_low": rlo,
                "ref_ci_high": rhi,
                "delta": delta,
                "k_differs": k_differs,
                "reference_id": ref["reference_id"],
                "ref_tool": ref["tool"],
                "fail_drop": ref.get("fail_drop"),
            }
        )
    return pd.DataFrame(out)


def chart(table: pd.DataFrame, title: str = "Accuracy: this run vs published") -> go.Figure:
    """Grouped bars of rates (run vs reference) with Wilson 95% error bars; emulated runs say so."""

    df = table[table["rate"].notna()].copy() if len(table) else table
    emulated = bool(len(df)) and (df["source"] == SOURCE_EMULATED).any()
    labels = [f"{s} / {m}" for s, m in zip(df.get("suite", []), df.get("metric", []))]
    fig = go.Figure()

    def bars(name: str, y: pd.Series, lo: pd.Series, hi: pd.Series, color: str) -> None:
        yv = [None if pd.isna(v) else float(v) for v in y]
        plus = [None if (pd.isna(h) or v is None) else float(h) - v for h, v in zip(hi, yv)]
        minus = [None if (pd.isna(low) or v is None) else v - float(low) for low, v in zip(lo, yv)]
        fig.add_bar(
            name=name,
            x=labels,
            y=yv,
            marker_color=color,
            error_y={"type": "data", "array": plus, "arrayminus": minus, "visible": True},
        )

    if len(df):
        bars(
            f"this run ({source_label(bool(emulated), upper=True)})", df["rate"], df["ci_low"], df["ci_high"], "#1f77b4"
        )
        bars("published reference", df["ref_rate"], df["ref_ci_low"], df["ref_ci_high"], "#ff7f0e")
    full_title = title + (" — EMULATED server: numbers test the pipeline, not the model" if emulated else "")
    fig.update_layout(
        title=full_title,
        barmode="group",
        yaxis={"title": "rate", "range": [0, 1.05]},
        xaxis={"title": "suite / metric"},
        legend={"orientation": "h"},
    )
    return fig
