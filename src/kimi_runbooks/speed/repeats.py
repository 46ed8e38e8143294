"""Repeated runs of a scenario: which repeats are still to run, and their mean with a 95% interval.

A scenario (`Scenario.repeats`) or the whole speed stage (`SpeedOptions.repeats`; a scenario's own
value wins) can ask for N runs. Each run is its own row in bench.jsonl (`repeat` k of `repeats` N),
appended as it finishes, so a killed stage resumes at the next missing repeat (`pending`). Every
repeat sends the same kind of workload with new prompts (its own seed, speed/freshness.py) and
flushes the server's prefix cache after its warm-up where the server has /flush_cache, so its
interval covers the prompts drawn as well as the server, and no repeat is served from the cache of
the one before.

`collapse` turns a scenario's repeats into one row: every metric the repeats measured differently is
their mean, and the main metrics (MAIN_METRICS) get a 95% interval for the mean, Student t with N-1
degrees of freedom (`<metric>_ci_low`, `<metric>_ci_high`, with `<metric>_sd` and `<metric>_n`).
One run gives no interval (never a zero-width one): its row says so in `interval_note`.

`difference` judges two means (two run folders' same scenario) with Welch's t interval for the
difference of means: "noise" when it contains 0, "real change" when it does not; with a single run
on either side there is no interval and it says so. Welch's rule, rather than "the two intervals
overlap", because overlapping 95% intervals can still hide a significant difference (the overlap
rule tests at about the 0.5% level, not 5%); the difference's own interval tests at 5%.

The t quantiles are computed here (the regularized incomplete beta function, inverted by
bisection), so no scipy is needed; tests/speed/test_repeats.py checks them against the published
table values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..catalog.scenario_models import MAX_REPEATS
from ..rundir.attempts import latest_by_repeat

LEVEL = 0.95
MAIN_METRICS = ("median_ttft_ms", "median_tpot_ms", "output_throughput", "goodput_tok_s")
"""The metrics a repeated scenario reports with an interval (goodput only where an SLO gave one)."""
INTERVAL_SUFFIXES = ("_ci_low", "_ci_high", "_sd")
"""Columns on the same scale as their metric (speed.timescale rescales them with it)."""
NO_INTERVAL = "one run: no interval (a 95% interval needs 2 runs or more; set repeats)"
METHOD = "mean of {n} runs, 95% interval for the mean (Student t, {df} degrees of freedom)"


class RepeatsError(ValueError):
    """A repeats setting that cannot be run; the message names the rule and the fix."""


def check_repeats(value: Any, where: str) -> int | None:
    """None (not set) or an int in 1..MAX_REPEATS; anything else raises RepeatsError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_REPEATS:
        raise RepeatsError(
            f"{where}: repeats must be a whole number from 1 to {MAX_REPEATS} (got {value!r}). "
            "Fix: e.g. repeats=3 for a mean with a 95% interval, or leave it unset for one run."
        )
    return value


# --------------------------------------------------------------------------- Student t


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom (df > 0, need not be whole)."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p quantile of Student's t (0 < p < 1, df > 0), by bisection on t_cdf."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0 (got p={p}, df={df})")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


# --------------------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """The mean of n values and, for n >= 2, its two-sided `level` interval (Student t)."""

    n: int
    mean: float
    sd: float | None
    low: float | None
    high: float | None
    t: float | None
    level: float = LEVEL

    @property
    def half_width(self) -> float | None:
        return None if self.low is None or self.high is None else (self.high - self.low) / 2.0

    @property
    def note(self) -> str:
        return NO_INTERVAL if self.low is None else METHOD.format(n=self.n, df=self.n - 1)


def _finite(values: Iterable[Any]) -> list[float]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if math.isfinite(float(v)):
            out.append(float(v))
    return out


def interval(values: Iterable[Any], level: float = LEVEL) -> Interval | None:
    """Mean and interval of the finite numbers in `values`; None when there are none."""
    xs = _finite(values)
    n = len(xs)
    if n == 0:
        return None
    mean = sum(xs) / n
    if n == 1:
        return Interval(1, mean, None, None, None, None, level)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    t = t_quantile(0.5 + level / 2.0, n - 1)
    half = t * sd / math.sqrt(n)
    return Interval(n, mean, sd, mean - half, mean + half, t, level)


@dataclass(frozen=True)
class Difference:
    """b - a with Welch's interval; `verdict` is "noise", "real change" or "no interval"."""

    delta: float
    low: float | None
    high: float | None
    verdict: str
    reason: str


def difference(
    a: tuple[float, float | None, int], b: tuple[float, float | None, int], level: float = LEVEL
) -> Difference:
    """Two (mean, sd, n) summaries: Welch's `level` interval for mean_b - mean_a and what it says."""
    (ma, sa, na), (mb, sb, nb) = a, b
    delta = mb - ma
    if na < 2 or nb < 2 or sa is None or sb is None:
        single = " and ".join(w for w, n in (("the first", na), ("the second", nb)) if n < 2)
        return Difference(delta, None, None, "no interval", f"{single} is a single run: no interval, so no judgement")
    va, vb = sa * sa / na, sb * sb / nb
    se = math.sqrt(va + vb)
    if se == 0.0:  # identical repeats on both sides: any difference is outside the (empty) noise
        verdict = "noise" if delta == 0 else "real change"
        return Difference(delta, delta, delta, verdict, "every repeat measured the same value on both sides")
    df = (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    half = t_quantile(0.5 + level / 2.0, df) * se
    low, high = delta - half, delta + half
    inside = low <= 0.0 <= high
    reason = f"Welch 95% interval of the difference [{low:.4g}, {high:.4g}] ({df:.1f} df) " + (
        "contains 0" if inside else "excludes 0"
    )
    return Difference(delta, low, high, "noise" if inside else "real change", reason)


# --------------------------------------------------------------------------- which repeats to run


def repeats_for(scenario_repeats: int | None, stage_repeats: int | None) -> int:
    """A scenario's own repeats, else the stage's, else 1."""
    return scenario_repeats or stage_repeats or 1


def repeat_key(scenario_id: str, repeat: int, repeats: int) -> str:
    """The name a repeat's output file and log are kept under (the scenario id for one run)."""
    return scenario_id if repeats <= 1 else f"{scenario_id}.r{repeat}"


def pending(wanted: Mapping[str, int], rows: Iterable[dict[str, Any]], finished: Sequence[str]) -> dict[str, list[int]]:
    """Per scenario id (wanted: id -> repeats), the repeats not yet finished in `rows` (bench.jsonl).

    A scenario over capacity (or otherwise finished without running) at any repeat needs no more."""
    latest = latest_by_repeat(rows)
    out: dict[str, list[int]] = {}
    for scenario_id, n in wanted.items():
        done = {k for (s, k), r in latest.items() if s == scenario_id and r.get("status") in finished}
        if any(latest[(scenario_id, k)].get("status") not in ("ok", None) for k in done):
            out[scenario_id] = []  # over-capacity: the same at every repeat
            continue
        out[scenario_id] = [k for k in range(1, n + 1) if k not in done]
    return out


def run_repeats(indices: Sequence[int], once: Callable[[int], dict[str, Any]]) -> dict[str, Any]:
    """`once(k)` for each pending repeat k in order; stops at the first that is not ok (a failed or
    over-capacity repeat would fail the same way again). Returns the last row."""
    row: dict[str, Any] = {}
    for k in indices:
        row = once(k)
        if row.get("status") != "ok":
            break
    return row


# --------------------------------------------------------------------------- one row per scenario


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _mean_row(ok: list[dict[str, Any]]) -> dict[str, Any]:
    """The last repeat's row with every number the repeats measured differently replaced by their mean."""
    new = dict(ok[-1])
    for key in new:
        values = [r.get(key) for r in ok]
        if key != "repeat" and all(_number(v) for v in values) and len(set(values)) > 1:
            xs = _finite(values)
            new[key] = sum(xs) / len(xs) if xs else math.nan
    behind = [r for r in ok if r.get("emulator_behind") is True]
    if behind:  # one repeat the emulator could not keep up with makes the mean not representative
        new["emulator_behind"] = True
        new["not_representative"] = f"{len(behind)} of {len(ok)} repeats: {behind[-1].get('not_representative')}"
    return new


def _index(row: Mapping[str, Any]) -> int:
    return int(row.get("repeat") or 1)


def collapse(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flattened rows (latest attempt per scenario and repeat) -> one row per scenario, in order.

    Adds `repeats` (asked for), `n_runs` (ok repeats in the mean), `interval_note`, and for each
    main metric measured by 2 ok repeats or more `<metric>_ci_low/_ci_high/_sd/_n`. A scenario with a
    repeat that failed, was skipped or not comparable keeps that repeat's row and status, its error
    prefixed with which repeat."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        sid = str(rec["scenario"])
        groups[sid] = [*groups.pop(sid, []), rec]  # a scenario sits where its latest repeat ran
    out = []
    for group in groups.values():
        n_asked = int(group[-1].get("repeats") or 1)
        used = sorted(
            (r for r in group if int(r.get("repeat") or 1) <= n_asked), key=lambda r: int(r.get("repeat") or 1)
        )
        ok = [r for r in used if r.get("status") == "ok"]
        bad = [r for r in group if r in used and r.get("status") != "ok"]
        if bad:
            row = dict(bad[-1])
            if n_asked > 1 and row.get("status") != "over-capacity":
                row["error"] = f"repeat {int(row.get('repeat') or 1)} of {n_asked}: {row.get('error')}"
        elif len(ok) > 1:
            row = _mean_row(ok)
        else:
            row = dict(used[-1])
        row.update(repeats=n_asked, n_runs=len(ok))
        if not bad and len(ok) > 1:
            for metric in MAIN_METRICS:
                iv = interval(r.get(metric) for r in ok)
                if iv is not None and iv.low is not None:
                    row.update(
                        {metric: iv.mean, f"{metric}_ci_low": iv.low, f"{metric}_ci_high": iv.high}
                        | {f"{metric}_sd": iv.sd, f"{metric}_n": iv.n}
                    )
            row["interval_note"] = METHOD.format(n=len(ok), df=len(ok) - 1)
        elif n_asked > 1 or not bad:
            row["interval_note"] = NO_INTERVAL
        if not bad and len(ok) < n_asked:
            row["interval_note"] = f"{len(ok)} of {n_asked} repeats ran (a rerun resumes the rest); " + str(
                row["interval_note"]
            )
        out.append(row)
    return out


def repeat_summary(per_repeat: Any, scenarios: Iterable[str] | None = None) -> Any:
    """One row per scenario and main metric from per-repeat rows (load_results(..., per_repeat=True)),
    only `scenarios` when given: n, mean, sd, t, low, high and the method (or why there is no interval)."""
    import pandas as pd

    records = []
    if per_repeat.empty:
        return pd.DataFrame(columns=["scenario", "metric", "n", "mean", "sd", "t", "low", "high", "note"])
    ok = per_repeat[per_repeat["status"] == "ok"] if "status" in per_repeat.columns else per_repeat
    if scenarios is not None:
        ok = ok[ok["scenario"].isin(list(scenarios))]
    for scenario, part in ok.groupby("scenario", sort=False):
        for metric in MAIN_METRICS:
            iv = interval(part[metric]) if metric in part.columns else None
            if iv is None:
                continue
            records.append(
                {"scenario": scenario, "metric": metric, "n": iv.n, "mean": iv.mean, "sd": iv.sd}
                | {"t": iv.t, "low": iv.low, "high": iv.high, "note": iv.note}
            )
    return pd.DataFrame.from_records(records)
