"""The calibration on disk: params/perfmodel/calibration.yaml.

Written only by `python -m kimi_runbooks.perfmodel calibrate --write` (calibration.py); read by
every prediction. It holds the global and per-family efficiency factors and the uncertainty
bands (validation.py): quantiles of the log errors leaving one document out (a platform family
never calibrated) and leaving one run out (a calibrated family), per metric.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..rundir import write_redacted
from .factors import PRIOR, Factors

CALIBRATION_FILE = Path("perfmodel") / "calibration.yaml"
BAND_METRICS = ("median_tpot_ms", "output_throughput", "median_ttft_ms")
DEFAULT_BAND = (-0.7, 0.7)  # +-100% when no validation has run yet


@dataclass(frozen=True)
class Calibration:
    global_factors: Factors = PRIOR
    families: dict[str, Factors] = field(default_factory=dict)
    by_format: dict[str, dict[str, float]] = field(default_factory=dict)
    band: dict[str, tuple[float, float]] = field(default_factory=dict)
    references: tuple[str, ...] = ()
    source: str = "prior (no calibration file)"
    band_calibrated: dict[str, tuple[float, float]] = field(default_factory=dict)
    family_formats: dict[str, tuple[str, ...]] = field(default_factory=dict)
    band_by_family: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    """Per calibrated family: its own leave-one-run-out quantiles, never narrower than band_calibrated
    (a family the model fits worse, like amd-cdna, gets the wider band its errors earned)."""
    targets_only: tuple[str, ...] = ()
    """Families whose fit saw only published SLO ceilings (Ascend), no measurement: their factors
    are used, but no validation has measured them, so their band is a new family's."""

    def factors(self, family: str, weight_format: str | None = None) -> Factors:
        """The family's own factors when it was calibrated on this weight format; a calibrated
        family running another format keeps its own factors but takes the expert-kernel
        factors of that format; an uncalibrated family takes the global factors, with the
        format's expert-kernel factors when any family runs it."""
        overrides = self.by_format.get(weight_format or "", {})
        if family in self.families:
            if self.calibrated(family, weight_format) or not overrides:
                return self.families[family]
            return replace(self.families[family], **overrides)
        return replace(self.global_factors, **overrides) if overrides else self.global_factors

    def calibrated(self, family: str, weight_format: str | None = None) -> bool:
        """Published results of this family (and, when given, this weight format) were fitted."""
        if family not in self.families:
            return False
        formats = self.family_formats.get(family)
        return weight_format is None or not formats or weight_format in formats

    def validated(self, family: str, weight_format: str | None = None) -> bool:
        """Calibrated on measured results (not only on SLO ceilings): the run-out band applies."""
        return self.calibrated(family, weight_format) and family not in self.targets_only

    def basis(self, family: str, weight_format: str | None = None) -> str:
        """What the family's factors were fitted to, in words a band label can carry."""
        if self.validated(family, weight_format):
            return "measured"
        if self.calibrated(family, weight_format):
            return "slo-targets-only"
        return "borrowed"

    def band_for(self, metric: str, calibrated: bool = False, family: str | None = None) -> tuple[float, float]:
        """(low, high) quantiles of log(predicted / published) for `metric`: leave-one-run-out
        for a calibrated family (its own when validation gave it one), leave-one-document-out
        (a new family) otherwise."""
        own = self.band_by_family.get(family or "", {}) if calibrated else {}
        if metric in own:
            return own[metric]
        table = self.band_calibrated if calibrated and self.band_calibrated else self.band
        return table.get(metric, DEFAULT_BAND)

    def as_dict(self) -> dict[str, Any]:
        return {
            "references": list(self.references),
            "global": self.global_factors.as_dict(),
            "families": {k: v.as_dict() for k, v in sorted(self.families.items())},
            "family_weight_formats": {k: list(v) for k, v in sorted(self.family_formats.items())},
            "by_weight_format": {
                k: {n: float(f"{x:.6g}") for n, x in v.items()} for k, v in sorted(self.by_format.items())
            },
            "band_new_family": _band_dict(self.band),
            "band_calibrated_family": _band_dict(self.band_calibrated),
            "band_by_family": {k: _band_dict(v) for k, v in sorted(self.band_by_family.items())},
            "families_fitted_to_targets_only": list(self.targets_only),
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
        global_factors=Factors(**data["global"]),
        families={k: Factors(**v) for k, v in (data.get("families") or {}).items()},
        by_format={k: dict(v) for k, v in (data.get("by_weight_format") or {}).items()},
        family_formats={k: tuple(v) for k, v in (data.get("family_weight_formats") or {}).items()},
        band=_band(data.get("band_new_family")),
        band_calibrated=_band(data.get("band_calibrated_family")),
        band_by_family={k: _band(v) for k, v in (data.get("band_by_family") or {}).items()},
        targets_only=tuple(data.get("families_fitted_to_targets_only") or ()),
        references=tuple(data.get("references") or ()),
        source=f"{path.name} ({', '.join(data.get('references') or [])})",
    )


HEADER = """\
# Performance-model calibration: efficiency factors per platform family and the uncertainty band.
# Generated; do not edit. Reproduce with:  python -m kimi_runbooks.perfmodel calibrate --write
# Method: src/kimi_runbooks/perfmodel/calibration.py (least squares on log errors of median TPOT,
# output throughput and median TTFT over params/references; bands = 10th-90th percentiles of
# log(predicted/published) leaving one document out (new family) or one run out (calibrated
# family): src/kimi_runbooks/perfmodel/validation.py, table: benchmarks/perfmodel_loo.py).
"""


def save_calibration(cal: Calibration, params_root: Path, extra: dict[str, Any] | None = None) -> Path:
    body = {**cal.as_dict(), **(extra or {})}
    return write_redacted(calibration_path(params_root), HEADER + yaml.safe_dump(body, sort_keys=False, width=100))
