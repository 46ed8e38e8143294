"""How far predictions stray from published results, measured without peeking.

* leave one page out (the headline): every row of one public source page (all the references
  transcribed from it: the Kimi-K2.6 cookbook page carries the H200 and MI350X results) predicted
  by a calibration refitted, with its own degrees-of-freedom budget, without that page.
* time split: each dated page (`published:`) predicted by a calibration fitted only on pages
  published strictly before it (undated pages take no part).
* leave one run out: one benchmark run (all metrics of one scenario cell) predicted after refitting,
  from the full fit, the free parameters that run reads, without it: a calibrated family's accuracy
  on a scenario it has not seen.
* held out: references with `held_out: true` are never fitted; predicted by the full calibration.

The band a prediction carries is the 10th-90th percentile of these log errors (run-out for a
calibrated family on a fitted stack, page-out otherwise: store.Calibration.band_for). Coverage
counts a held-out result inside when it lies in the band a user would have been shown for it,
computed from the OTHER pages' errors only (`honest_band`), so a page never sizes its own band.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .calibration import Evaluator, calibration_of, fit, fit_all, free_parameters
from .observations import Observation
from .store import BAND_METRICS, WIDENING, Calibration

BAND_QUANTILES = (0.1, 0.9)
HEADLINE = ("median_tpot_ms", "output_throughput")


@dataclass(frozen=True)
class Check:
    obs: Observation
    predicted: float
    method: str  # "page-out", "reference-out", "time-split", "run-out", "held-out"
    basis: str = "measured"  # what the predicting calibration said about this family and stack

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


LEAVE_OUT: dict[str, Callable[[Observation], str]] = {"reference": _reference, "page": _page}


def _checks(ev: Evaluator, cal: Calibration, rows: list[Observation], method: str) -> list[Check]:
    return [
        Check(
            o,
            ev.value(o, cal.values, cal.lenders),
            method,
            cal.basis(o.family, o.stack) if cal.references else "borrowed",
        )
        for o in rows
    ]


def leave_one_document_out(ev: Evaluator, by: str = "page") -> list[Check]:
    key = LEAVE_OUT[by]
    out: list[Check] = []
    fitted = [o for o in ev.obs if o.fit]
    for doc in sorted({key(o) for o in ev.obs if not o.held_out}):
        rest = [o for o in fitted if key(o) != doc]
        held = [o for o in ev.obs if key(o) == doc and not o.held_out]
        cal, _ = fit_all(ev, rest)
        out.extend(_checks(ev, cal, held, f"{by}-out"))
    return out


def time_split(ev: Evaluator) -> list[Check]:
    """Each dated page predicted by a fit on the pages published strictly before it."""
    dated = [o for o in ev.obs if o.published_on and not o.held_out]
    out: list[Check] = []
    for date in sorted({o.published_on for o in dated}):
        older = [o for o in dated if o.fit and o.published_on < date]
        if not older:
            continue
        cal, _ = fit_all(ev, older)
        out.extend(_checks(ev, cal, [o for o in dated if o.published_on == date], "time-split"))
    return out


def held_out(ev: Evaluator, cal: Calibration) -> list[Check]:
    return _checks(ev, cal, [o for o in ev.obs if o.held_out], "held-out")


def leave_one_run_out(ev: Evaluator, values: dict[str, float]) -> list[Check]:
    fitted = [o for o in ev.obs if o.fit]
    free = set(values)
    out: list[Check] = []
    for run in sorted({(o.reference_id, o.scenario_id) for o in ev.obs if o.kind != "targets" and not o.held_out}):
        held = [o for o in ev.obs if (o.reference_id, o.scenario_id) == run]
        rest = [o for o in fitted if (o.reference_id, o.scenario_id) != run]
        touched = sorted({n for o in held for n in ev.names(o)} & free)
        if not any(o.family == held[0].family for o in rest):
            continue
        refit = {**values, **fit(ev, rest, touched, start=values)} if touched else values
        cal = calibration_of(ev, refit, rest)
        out.extend(_checks(ev, cal, held, "run-out"))
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
    """Each family's own band, widened to hold the pooled band (never narrower than the pool's)."""
    pooled = band(checks)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for fam in sorted({c.obs.family for c in measured(checks)}):
        own = band([c for c in checks if c.obs.family == fam])
        out[fam] = {m: (min(lo, pooled[m][0]), max(hi, pooled[m][1])) for m, (lo, hi) in own.items()}
    return out


def honest_band(c: Check, page_out: list[Check], run_out: list[Check]) -> tuple[float, float]:
    """The band `plan --predict` would show for this result, sized from the other pages' errors."""
    page = _page(c.obs)
    metric = c.obs.metric
    if c.basis == "measured":
        pool = [x for x in run_out if _page(x.obs) != page]
        own = family_bands(pool).get(c.obs.family, {})
        if metric in own:
            return own[metric]
    lo, hi = band([x for x in page_out if _page(x.obs) != page]).get(metric, (-0.7, 0.7))
    widen = WIDENING.get(c.basis, 1.0)
    return lo * widen, hi * widen


def coverage(checks: list[Check], page_out: list[Check], run_out: list[Check]) -> dict[str, dict[str, Any]]:
    """Per group ("all", each family, each stack): per HEADLINE metric (inside, rows) and median |error|."""
    groups: dict[str, list[tuple[Check, bool]]] = {}
    for c in measured(checks):
        if c.obs.metric not in HEADLINE:
            continue
        lo, hi = honest_band(c, page_out, run_out)
        inside = lo <= c.log_error <= hi
        for g in ("all", f"family {c.obs.family}", f"stack {c.obs.stack.label()}"):
            groups.setdefault(g, []).append((c, inside))
    out: dict[str, dict[str, Any]] = {}
    for g, items in groups.items():
        row: dict[str, Any] = {}
        for m in HEADLINE:
            sel = [(c, i) for c, i in items if c.obs.metric == m]
            if sel:
                row[m] = {
                    "inside": sum(i for _, i in sel),
                    "rows": len(sel),
                    "coverage": round(sum(i for _, i in sel) / len(sel), 3),
                    "median_abs_error": round(float(np.median([abs(c.error) for c, _ in sel])), 4),
                }
        out[g] = row
    return out


def format_coverage(cov: dict[str, dict[str, Any]], title: str) -> str:
    lines = [f"{title}: median |error| and results inside the 10th-90th band shown to users (holds: ~80%)"]
    if not cov:
        return lines[0] + "\n  (no results)"
    order = ["all"] + sorted(g for g in cov if g.startswith("family")) + sorted(g for g in cov if g.startswith("stack"))
    for g in order:
        cells = [
            f"{m} |err| {v['median_abs_error']:.0%} in-band {v['inside']}/{v['rows']} ({v['coverage']:.0%})"
            for m, v in cov[g].items()
        ]
        lines.append(f"  {g[:44]:44} " + "; ".join(cells))
    return "\n".join(lines)


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
    return {
        "median_abs_error": {m: round(median_abs_error(checks, m), 4) for m in BAND_METRICS},
        "median_abs_error_tpot_and_throughput_by_family": per_family,
        "worst_family": max(per_family, key=lambda k: per_family[k]) if per_family else None,
        "rows": len(measured(checks)),
    }


@dataclass(frozen=True)
class Validation:
    page_out: list[Check]
    run_out: list[Check]
    time_split: list[Check]
    held_out: list[Check]

    def report(self) -> dict[str, Any]:
        """What calibration.yaml's `validation:` records (median |error| beside coverage)."""
        out: dict[str, Any] = {}
        for name, checks in (("page_out", self.page_out), ("time_split", self.time_split), ("held_out", self.held_out)):
            out[name] = {**summary(checks), "coverage": coverage(checks, self.page_out, self.run_out)}
        out["run_out"] = summary(self.run_out)
        return out


def calibrate(ev: Evaluator) -> tuple[Calibration, Validation]:
    """The fit, the validations, and the calibration carrying the bands."""
    cal, _ = fit_all(ev, ev.obs)
    page_out = leave_one_document_out(ev, "page")
    run_out = leave_one_run_out(ev, cal.values)
    cal = replace(cal, band=band(page_out), band_calibrated=band(run_out), band_by_family=family_bands(run_out))
    return cal, Validation(page_out, run_out, time_split(ev), held_out(ev, cal))


def budget_report(ev: Evaluator) -> dict[str, Any]:
    b = free_parameters(ev, ev.obs)
    return {
        fam: {
            "data_points": b.points[fam],
            "runs": b.runs[fam],
            "free_parameters": round(b.dof[fam], 3),
            "budget": round(b.runs[fam] / 3, 3),
        }
        for fam in sorted(b.runs)
    }


def format_checks(checks: list[Check], title: str) -> str:
    """A plain-text table: reference, run, metric, predicted, published, error, basis."""
    lines = [title, f"{'reference':28} {'run':30} {'metric':18} {'predicted':>10} {'published':>10} {'error':>7} basis"]
    for c in checks:
        kind = " (SLO ceiling)" if c.obs.kind == "targets" else ""
        lines.append(
            f"{c.obs.reference_id[:28]:28} {c.obs.scenario_id[:30]:30} {c.obs.metric:18} "
            f"{c.predicted:10.1f} {c.obs.published:10.1f} {c.error:+7.0%} {c.basis}{kind}"
        )
    s = summary(checks)
    if not s["rows"]:
        return "\n".join([*lines, "(no measured rows)"])
    lines.append(
        "median |error| over measured rows: "
        + ", ".join(f"{k} {v:.0%}" for k, v in s["median_abs_error"].items())
        + f" ({s['rows']} rows)"
    )
    fams = s["median_abs_error_tpot_and_throughput_by_family"]
    lines.append(
        "median |error| of TPOT and output throughput by family: "
        + ", ".join(f"{k} {v:.0%}" for k, v in fams.items())
        + f"; worst: {s['worst_family']}"
    )
    return "\n".join(lines)
