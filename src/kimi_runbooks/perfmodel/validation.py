"""How far predictions stray from published results, measured without peeking.

* leave one document out: each reference document's rows predicted by a calibration fitted
  without that document. With one document per platform family today, this measures how the
  model transfers to a family it was never calibrated on (B300, MI355X, ... are in that case).
* leave one run out: each benchmark run (all metrics of one scenario cell) predicted by its
  own family's factors refitted without that run: the accuracy on a calibrated family for a
  scenario it has not seen.

The uncertainty band of a prediction is the 10th-90th percentile of these log errors: the
run-out band for a calibrated family (its own rows' quantiles, never narrower than all families'
together), the document-out band otherwise. SLO targets (Ascend)
are reported beside, never counted as measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .calibration import Evaluator, combine, factors_of, fit_all, fit_family
from .observations import Observation
from .store import BAND_METRICS, Calibration

BAND_QUANTILES = (0.1, 0.9)
HEADLINE = ("median_tpot_ms", "output_throughput")


@dataclass(frozen=True)
class Check:
    obs: Observation
    predicted: float
    method: str  # "document-out" or "run-out"

    @property
    def error(self) -> float:
        """(predicted - published) / published."""
        return self.predicted / self.obs.published - 1.0

    @property
    def log_error(self) -> float:
        ok = math.isfinite(self.predicted) and self.predicted > 0
        return math.log(self.predicted / self.obs.published) if ok else math.nan


def _reference(o: Observation) -> str:
    return o.reference_id


def _page(o: Observation) -> str:
    return o.document or o.reference_id


LEAVE_OUT = {"reference": _reference, "page": _page}
"""What one document is: a reference file of params/references (one platform's published results,
the headline), or the public page it was transcribed from (stricter: the Kimi-K2.6 cookbook page
carries both the H200 and the MI350X results, so both leave together)."""


def leave_one_document_out(ev: Evaluator, params: dict[str, np.ndarray], by: str = "reference") -> list[Check]:
    key = LEAVE_OUT[by]
    out: list[Check] = []
    for doc in sorted({key(o) for o in ev.obs}):
        rest = [o for o in ev.obs if key(o) != doc and o.fit]
        held = [o for o in ev.obs if key(o) == doc]
        trimmed = dict(params)
        for fam in {o.family for o in held}:
            left = [o for o in rest if o.family == fam]
            if left:
                trimmed[fam] = fit_family(ev, left)
            else:
                trimmed.pop(fam, None)
        cal = combine(ev, trimmed, rest)
        out.extend(Check(o, ev.value(o, cal.factors(o.family, ev.weight_format(o))), "document-out") for o in held)
    return out


def leave_one_run_out(ev: Evaluator) -> list[Check]:
    out: list[Check] = []
    for run in sorted({(o.reference_id, o.scenario_id) for o in ev.obs if o.kind != "targets"}):
        held = [o for o in ev.obs if (o.reference_id, o.scenario_id) == run]
        fam = held[0].family
        left = [o for o in ev.obs if o.family == fam and o.fit and (o.reference_id, o.scenario_id) != run]
        if not left:
            continue
        factors = factors_of(fit_family(ev, left))
        out.extend(Check(o, ev.value(o, factors), "run-out") for o in held)
    return out


def measured(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.obs.kind != "targets" and math.isfinite(c.log_error)]


def band(checks: list[Check]) -> dict[str, tuple[float, float]]:
    out = {}
    for metric in BAND_METRICS:
        errs = [c.log_error for c in measured(checks) if c.obs.metric == metric]
        if errs:
            lo, hi = np.quantile(errs, BAND_QUANTILES)
            out[metric] = (float(lo), float(hi))
    return out


def family_bands(checks: list[Check]) -> dict[str, dict[str, tuple[float, float]]]:
    """Each family's own band (its checks' log-error quantiles), widened to hold the pooled band:
    a family the model fits worse than the rest gets the wider band its errors earned, and a
    family with few rows never a narrower one than the pool's."""
    pooled = band(checks)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for fam in sorted({c.obs.family for c in measured(checks)}):
        own = band([c for c in checks if c.obs.family == fam])
        out[fam] = {m: (min(lo, pooled[m][0]), max(hi, pooled[m][1])) for m, (lo, hi) in own.items()}
    return out


def median_abs_error(checks: list[Check], metric: str | None = None, family: str | None = None) -> float:
    errs = [
        abs(c.error)
        for c in measured(checks)
        if (metric is None or c.obs.metric == metric) and (family is None or c.obs.family == family)
    ]
    return float(np.median(errs)) if errs else math.nan


def summary(checks: list[Check]) -> dict[str, Any]:
    fams = sorted({c.obs.family for c in measured(checks)})
    per_family = {}
    for fam in fams:
        errs = [abs(c.error) for c in measured(checks) if c.obs.family == fam and c.obs.metric in HEADLINE]
        per_family[fam] = round(float(np.median(errs)), 4)
    per_document = {}
    for ref in sorted({c.obs.reference_id for c in measured(checks)}):
        errs = [abs(c.error) for c in measured(checks) if c.obs.reference_id == ref and c.obs.metric in HEADLINE]
        if errs:
            per_document[ref] = round(float(np.median(errs)), 4)
    return {
        "median_abs_error": {m: round(median_abs_error(checks, m), 4) for m in BAND_METRICS},
        "median_abs_error_tpot_and_throughput_by_family": per_family,
        "median_abs_error_tpot_and_throughput_by_document": per_document,
        "worst_family": max(per_family, key=lambda k: per_family[k]) if per_family else None,
        "rows": len(measured(checks)),
    }


def band_coverage(
    checks: list[Check], cal: Calibration, ev: Evaluator, by: str = "page"
) -> dict[str, dict[str, tuple[int, int]]]:
    """How many held-out results fall inside the band a user is shown: per metric of HEADLINE,
    (inside, rows), overall ("all") and per family. A row's band is the one `plan --predict`
    displays (Calibration.band_for): its family's run-out band when the family keeps other fitted
    documents after `by` leaves this row's out, else the new-family band. A 10th-90th percentile
    band that holds contains about 80% of them."""
    key = LEAVE_OUT[by]
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for c in measured(checks):
        if c.obs.metric not in HEADLINE:
            continue
        fam = c.obs.family
        others = any(o.family == fam and o.fit and key(o) != key(c.obs) for o in ev.obs)
        lo, hi = cal.band_for(c.obs.metric, calibrated=others and cal.validated(fam), family=fam)
        inside = int(lo <= c.log_error <= hi)
        for group in ("all", fam):
            row = out.setdefault(group, {})
            got, n = row.get(c.obs.metric, (0, 0))
            row[c.obs.metric] = (got + inside, n + 1)
    return out


def format_coverage(coverage: dict[str, dict[str, tuple[int, int]]], title: str) -> str:
    """One line per group: inside/rows (share) for each metric; about 80% is what the band claims."""
    lines = [f"{title}: results inside the 10th-90th percentile band shown to users (a band that holds: ~80%)"]
    for group in ["all", *sorted(g for g in coverage if g != "all")]:
        cells = [f"{m} {i}/{n} ({i / n:.0%})" for m, (i, n) in sorted(coverage.get(group, {}).items()) if n]
        lines.append(f"  {group:22} " + ", ".join(cells))
    return "\n".join(lines)


def calibrate(ev: Evaluator) -> tuple[Calibration, list[Check], list[Check]]:
    """The fit, both validations, and the calibration carrying both bands."""
    cal, params = fit_all(ev, ev.obs)
    doc_out = leave_one_document_out(ev, params)
    run_out = leave_one_run_out(ev)
    cal = replace(cal, band=band(doc_out), band_calibrated=band(run_out), band_by_family=family_bands(run_out))
    return cal, doc_out, run_out


def format_checks(checks: list[Check], title: str) -> str:
    """A plain-text table: reference, run, metric, predicted, published, error."""
    lines = [title, f"{'reference':28} {'run':32} {'metric':18} {'predicted':>10} {'published':>10} {'error':>8}"]
    for c in checks:
        kind = " (SLO ceiling)" if c.obs.kind == "targets" else ""
        lines.append(
            f"{c.obs.reference_id[:28]:28} {c.obs.scenario_id[:32]:32} {c.obs.metric:18} "
            f"{c.predicted:10.1f} {c.obs.published:10.1f} {c.error:+8.0%}{kind}"
        )
    s = summary(checks)
    mae = s["median_abs_error"]
    lines.append(
        "median |error| over measured rows: "
        + ", ".join(f"{k} {v:.0%}" for k, v in mae.items())
        + f" ({s['rows']} rows)"
    )
    fams = s["median_abs_error_tpot_and_throughput_by_family"]
    lines.append(
        "median |error| of TPOT and output throughput by family: "
        + ", ".join(f"{k} {v:.0%}" for k, v in fams.items())
        + f"; worst: {s['worst_family']}"
    )
    docs = s["median_abs_error_tpot_and_throughput_by_document"]
    lines.append(
        "... by document (a family's median weighs each row, so a document with many rows weighs more): "
        + ", ".join(f"{k} {v:.0%}" for k, v in docs.items())
    )
    return "\n".join(lines)
