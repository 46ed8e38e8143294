"""The calibration on disk: params/perfmodel/calibration.yaml.

Written only by `python -m kimi_runbooks.perfmodel calibrate --write` (calibration.py); read by
every prediction. It holds the fitted hardware efficiencies and software-stack terms (factors.py,
each inside its documented range), which stack terms fitted references touched, and the
uncertainty bands (validation.py): quantiles of the log errors leaving whole source pages out (a
family or stack never calibrated) and leaving one run out (a calibrated family), per metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..rundir import write_redacted
from .factors import RANGES, Factors, compose, kind_of, term_keys
from .stack import Stack

CALIBRATION_FILE = Path("perfmodel") / "calibration.yaml"


def family_stack(family: str, stack: Stack) -> str:
    return f"{family} {stack.moe_key()}"


def pipeline_key(pp: int) -> str:
    """Not a fitted parameter: marks that a fitted reference ran this many pipeline stages, so a pp
    plan no reference validates says so (the pipeline's own physics is step/serving's)."""
    return f"stack.pipeline[pp{pp}]"


BAND_METRICS = ("median_tpot_ms", "output_throughput", "median_ttft_ms")
DEFAULT_BAND = (-0.7, 0.7)  # +-100% when no validation has run yet
UNFITTED_STACK_BAND_WIDENING = 1.5
"""A stack no fitted reference ran (a stack term at its prior: say FlyDSL MoE, torch.compile on AMD)
takes the page-out band widened this much in log space: a judgement, nothing measured sizes it."""
FIRST_PRINCIPLES_BAND_WIDENING = 2.0
"""A model whose architecture no fitted reference has takes the page-out band widened this much."""
UNVALIDATED_SHAPE_BAND_WIDENING = 1.5
"""A shape no published measurement checks (pp, several nodes, PD pools: shape_basis.py) takes its band
widened this much in log space on top of the basis's widening: its first-principles terms were never
compared with a result. A judgement too: nothing measured sizes it."""
WIDENING = {"unfitted-stack": UNFITTED_STACK_BAND_WIDENING, "first-principles": FIRST_PRINCIPLES_BAND_WIDENING}

SUPPORT_TIERS = ("pages", "one page", "first principles")
"""What stands behind a prediction, narrowest band first: two or more public pages measured this
family on this stack, one page did, or none (the model's physics and terms fitted elsewhere). Each
tier's band is the 10th-90th percentile of the leave-one-page-out errors of the results that were
predicted with that much behind them (validation.support_bands), never widened by hand."""
MIN_TIER_ROWS = 6
"""A tier with fewer page-out errors of a metric than this borrows the next wider tier's band: a
quantile of five numbers sizes nothing."""


def support_tier(pages: int) -> str:
    """The tier of a prediction that `pages` public pages of its family and stack stand behind."""
    return "pages" if pages >= 2 else "one page" if pages == 1 else "first principles"


def support_text(pages: int) -> str:
    """What the output says: "2 pages, same stack" / "one page" / "first principles"."""
    return f"{pages} pages, same stack" if pages >= 2 else support_tier(pages)


@dataclass(frozen=True)
class Calibration:
    values: dict[str, float] = field(default_factory=dict)
    """Fitted parameters by name (factors.py); a name not here is at its prior."""
    references: tuple[str, ...] = ()
    source: str = "prior (no calibration file)"
    measured_families: tuple[str, ...] = ()
    targets_only: tuple[str, ...] = ()
    """Families whose fit saw only published SLO ceilings (Ascend), no measurement."""
    fitted_stack_keys: tuple[str, ...] = ()
    """Every parameter name a fitted reference's rows read (free or held at its prior)."""
    family_stacks: tuple[str, ...] = ()
    """"<family> <moe key>" of every fitted measured row: a family is validated on the MoE paths it ran."""
    lenders: tuple[str, ...] | None = None
    """The parameters a fitted measured row reads, the only ones an unfitted expert-kernel term
    borrows (factors.pooled); None (a calibration built by hand): every fitted parameter."""
    band: dict[str, tuple[float, float]] = field(default_factory=dict)
    band_calibrated: dict[str, tuple[float, float]] = field(default_factory=dict)
    band_by_family: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    """Per calibrated family: its own leave-one-run-out quantiles, never narrower than band_calibrated."""
    pages_by_family_stack: dict[str, int] = field(default_factory=dict)
    """"<family> <moe key>" -> public pages with measured fitted rows of it (calibration.pages_by_family_stack)."""
    band_by_support: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    """SUPPORT_TIERS -> per metric, the page-out quantiles of results predicted with that support."""

    def factors(self, family: str, stack: Stack | None = None) -> Factors:
        return compose(self.values, term_keys(family, stack or Stack()), self.lenders)

    def unfitted_terms(self, family: str, stack: Stack | None = None) -> list[str]:
        """The stack terms this prediction reads that no fitted reference ran (empty: all were)."""
        if not self.references:
            return []
        stack = stack or Stack()
        names = [*term_keys(family, stack).names(), *([pipeline_key(stack.pp)] if stack.pp > 1 else [])]
        return [n for n in names if n.startswith("stack.") and n not in self.fitted_stack_keys]

    def validated(self, family: str, stack: Stack | None = None) -> bool:
        """Calibrated on measured results of this family on this MoE path and precision (the other
        stack terms fitted somewhere): the run-out band applies."""
        ran = family_stack(family, stack or Stack()) in self.family_stacks
        return family in self.measured_families and ran and not self.unfitted_terms(family, stack)

    def basis(self, family: str, stack: Stack | None = None) -> str:
        if self.unfitted_terms(family, stack):
            return "unfitted-stack"
        if self.validated(family, stack):
            return "measured"
        if family in self.targets_only:
            return "slo-targets-only"
        return "borrowed"

    def pages(self, family: str, stack: Stack | None = None) -> int:
        """Public pages of this family on this stack the fit saw (0 unless the basis is measured:
        an unfitted term or a family fitted only to SLO ceilings has nothing measured behind it)."""
        if self.basis(family, stack) != "measured":
            return 0
        return self.pages_by_family_stack.get(family_stack(family, stack or Stack()), 0)

    def support_band(self, metric: str, pages: int, basis: str = "borrowed") -> tuple[float, float] | None:
        """The band of the support tier `pages` puts a prediction in (validation sized it from
        other pages' errors), widened for an unfitted architecture; None before validation ran."""
        tier = self.band_by_support.get(support_tier(pages), {})
        if metric not in tier:
            return None
        lo, hi = tier[metric]
        widen = FIRST_PRINCIPLES_BAND_WIDENING if basis == "first-principles" else 1.0
        return lo * widen, hi * widen

    def band_for(self, metric: str, basis: str = "borrowed", family: str | None = None) -> tuple[float, float]:
        """(low, high) quantiles of log(predicted / published): leave-one-run-out for a calibrated
        family on a fitted stack (its own when validation gave it one), else the page-out band,
        widened for an unfitted stack or architecture (WIDENING)."""
        if basis == "measured":
            own = self.band_by_family.get(family or "", {})
            if metric in own:
                return own[metric]
            if metric in self.band_calibrated:
                return self.band_calibrated[metric]
        lo, hi = self.band.get(metric, DEFAULT_BAND)
        widen = WIDENING.get(basis, 1.0)
        return lo * widen, hi * widen

    def as_dict(self) -> dict[str, Any]:
        return {
            "references": list(self.references),
            "parameters": {
                n: {"value": float(f"{v:.6g}"), "range": [RANGES[kind_of(n)].lo, RANGES[kind_of(n)].hi]}
                for n, v in sorted(self.values.items())
            },
            "measured_families": list(self.measured_families),
            "families_fitted_to_targets_only": list(self.targets_only),
            "stack_terms_read_by_fitted_references": list(self.fitted_stack_keys),
            "family_stacks_measured": list(self.family_stacks),
            "terms_read_by_measured_references": None if self.lenders is None else list(self.lenders),
            "band_new_family": _band_dict(self.band),
            "band_calibrated_family": _band_dict(self.band_calibrated),
            "band_by_family": {k: _band_dict(v) for k, v in sorted(self.band_by_family.items())},
            "pages_by_family_stack": dict(sorted(self.pages_by_family_stack.items())),
            "band_by_support": {k: _band_dict(v) for k, v in self.band_by_support.items()},
        }


def _band_dict(band: dict[str, tuple[float, float]]) -> dict[str, list[float]]:
    return {k: [round(lo, 4), round(hi, 4)] for k, (lo, hi) in sorted(band.items())}


def _band(data: Any) -> dict[str, tuple[float, float]]:
    return {k: (float(v[0]), float(v[1])) for k, v in (data or {}).items()}


def calibration_path(params_root: Path) -> Path:
    return Path(params_root) / CALIBRATION_FILE


def load_calibration(params_root: Path) -> Calibration:
    path = calibration_path(params_root)
    if not path.is_file():
        return Calibration()
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return Calibration(
        values={k: float(v["value"]) for k, v in (data.get("parameters") or {}).items()},
        references=tuple(data.get("references") or ()),
        measured_families=tuple(data.get("measured_families") or ()),
        targets_only=tuple(data.get("families_fitted_to_targets_only") or ()),
        fitted_stack_keys=tuple(data.get("stack_terms_read_by_fitted_references") or ()),
        family_stacks=tuple(data.get("family_stacks_measured") or ()),
        lenders=None
        if data.get("terms_read_by_measured_references") is None
        else tuple(data["terms_read_by_measured_references"]),
        band=_band(data.get("band_new_family")),
        band_calibrated=_band(data.get("band_calibrated_family")),
        band_by_family={k: _band(v) for k, v in (data.get("band_by_family") or {}).items()},
        pages_by_family_stack={k: int(v) for k, v in (data.get("pages_by_family_stack") or {}).items()},
        band_by_support={k: _band(v) for k, v in (data.get("band_by_support") or {}).items()},
        source=f"{path.name} ({', '.join(data.get('references') or [])})",
    )


HEADER = """\
# Performance-model calibration: hardware efficiencies (each inside its documented range) and
# software-stack terms, and the uncertainty bands. Generated; do not edit. Reproduce with:
#   python -m kimi_runbooks.perfmodel calibrate --write
# Method: src/kimi_runbooks/perfmodel/calibration.py (bounded least squares on log errors of median
# TPOT, output throughput and median TTFT over params/references, held_out references never fitted;
# ranges and why: factors.py RANGES). Bands = 10th-90th percentiles of log(predicted/published)
# leaving whole source pages out (new family or stack) or one run out (calibrated family):
# validation.py; table: benchmarks/perfmodel_loo.py. `validation` below: median |error| beside the
# coverage of the band, per family and per stack, for page-out, the time split and held-out pages.
"""


def save_calibration(cal: Calibration, params_root: Path, extra: dict[str, Any] | None = None) -> Path:
    body = {**cal.as_dict(), **(extra or {})}
    return write_redacted(calibration_path(params_root), HEADER + yaml.safe_dump(body, sort_keys=False, width=100))
