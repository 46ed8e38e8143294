"""Whether one operating-point probe met its SLO, and what its confirmation runs show.

A probe is judged on its own search tag (operating_point.search_tag): at least `attainment` of its
requests good (goodput.py), or bench_serving's statistic of each SLO'd latency within it, and never
on fewer requests than the percentile needs (`min_requests`: n >= ln(1 - c) / ln(p), the
order-statistic bound). The confirmation runs at the value found (operating_point.confirm) are
summed up by `confirmation_of`: how many met, and each judged statistic's mean and 95% interval.

A probe the emulator fell behind on (its row's ``emulator_lag.behind``, speed/emulator_lag.py) is
not judged at all: its latencies are the host's, not the latency model's, so "met" and "missed"
would both be wrong. `verdict` gives None for it, `judge` says "not representative" with the fix
(a larger time scale) and counts it as not shown to meet the SLO, so a search never climbs on it.
The time scale is the emulator's own start-up setting (no endpoint or header slows a running
emulator down: its fast-forward header only speeds a request up), so the stage cannot re-run such a
probe slower itself: it marks it, and the search's verdict says so instead of "missed".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

CONFIRM = "~confirm"
"""A confirmation run's scenario id is its probe's with this suffix (op@c13~confirm)."""

LATENCY_KIND = {"ttft_ms": "ttft", "tpot_ms": "tpot", "e2e_ms": "e2e_latency"}
"""Our SLO names -> bench_serving's metric names ({stat}_{kind}_ms)."""
CONFIDENCE = 0.95
QUANTILE = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
MEAN_MIN_REQUESTS = 30
"""A mean has no order-statistic bound: the usual floor for the normal approximation of a sample mean."""
NOT_REPRESENTATIVE = "not representative: the emulator fell behind its latency model"
MAX_QUANTILE = 0.99
"""attainment 1.0 (every request) has no finite bound: it is sized as the 99th percentile."""


def min_requests(criterion: str, attainment: float = 0.9, confidence: float = CONFIDENCE) -> int:
    """The fewest requests that can show the criterion's percentile at `confidence`: n >= ln(1-c)/ln(p)."""
    if criterion == "mean":
        return MEAN_MIN_REQUESTS
    p = min(attainment if criterion == "attainment" else QUANTILE[criterion], MAX_QUANTILE)
    return math.ceil(math.log(1.0 - confidence) / math.log(p) - 1e-9)


def _what_is_judged(criterion: str, attainment: float) -> str:
    return f"{attainment:.0%} attainment" if criterion == "attainment" else f"the {criterion}"


def behind(row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The row's emulator lag verdict when the emulator fell behind its latency model (else None)."""
    lag = row.get("emulator_lag")
    return lag if isinstance(lag, Mapping) and lag.get("behind") is True else None


def verdict(row: Mapping[str, Any]) -> bool | None:
    """True met, False missed, None not judged (a finished probe the emulator fell behind on)."""
    if row.get("status") == "ok" and behind(row) is not None:
        return None
    return judge(row)[0]


def judge(row: Mapping[str, Any]) -> tuple[bool, str]:
    """(met, why) for one probe row, from its own search tag; a probe the emulator fell behind on is
    (False, "not representative: ...") as it is not shown to meet the SLO (`verdict` tells it apart)."""
    tag = row.get("search") or {}
    status = row.get("status")
    if status != "ok":
        return False, f"{status}: {row.get('error') or 'no result'}"
    lag = behind(row)
    if lag is not None:
        return False, f"not judged, {lag.get('reason') or NOT_REPRESENTATIVE}"
    slo = {k: float(v) for k, v in (tag.get("slo") or {}).items()}
    scale = float(tag.get("time_scale") or 1.0)
    criterion, need = str(tag.get("criterion", "attainment")), float(tag.get("attainment") or 0.9)
    fewest = int(tag.get("min_requests") or min_requests(criterion, need))
    good = row.get("goodput") or {}
    count = good.get("requests") if criterion == "attainment" else (row.get("metrics") or {}).get("completed")
    if isinstance(count, (int, float)) and count < fewest:
        what = _what_is_judged(criterion, need)
        return False, (
            f"{count:g} requests: too few to judge {what} at {CONFIDENCE:.0%} confidence "
            f"(rule: n >= ln(1 - c) / ln(p) = {fewest})"
        )
    if criterion == "attainment":
        share = good.get("slo_attainment")
        if not isinstance(share, (int, float)):
            return False, "no per-request timings to judge the SLO by (goodput missing)"
        verb = "met" if share >= need else "missed"
        return share >= need, f"{share:.0%} of requests met the SLO ({verb}: {need:.0%} needed)"
    stat, metrics = tag["criterion"], row.get("metrics") or {}
    parts, met = [], True
    for key, ceiling in slo.items():
        observed = metrics.get(f"{stat}_{LATENCY_KIND[key]}_ms")
        if not isinstance(observed, (int, float)):
            return False, f"bench_serving reported no {stat}_{LATENCY_KIND[key]}_ms"
        fits = observed <= ceiling * scale
        met &= fits
        parts.append(f"{stat} {key} {observed / scale:.1f} {'<=' if fits else '>'} {ceiling:g}")
    return met, "; ".join(parts)


def judged_numbers(row: Mapping[str, Any]) -> dict[str, float]:
    """What judge() compared with the SLO, as numbers: the attainment share, or each SLO'd statistic (ms,
    on the model's clock)."""
    tag = row.get("search") or {}
    if tag.get("criterion", "attainment") == "attainment":
        share = (row.get("goodput") or {}).get("slo_attainment")
        return {"slo_attainment": float(share)} if isinstance(share, (int, float)) else {}
    scale = float(tag.get("time_scale") or 1.0)
    out = {}
    for key in tag.get("slo") or {}:
        name = f"{tag['criterion']}_{LATENCY_KIND[key]}_ms"
        observed = (row.get("metrics") or {}).get(name)
        if isinstance(observed, (int, float)):
            out[name] = float(observed) / scale
    return out


def confirmation_of(value: float, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The confirmation runs at one value: how many met the SLO, and each judged statistic's mean and
    95% interval over them (Student t, repeats.interval)."""
    from .repeats import interval

    met = [judge(r)[0] for r in rows]
    judged = [r for r in rows if behind(r) is None]  # a run the emulator fell behind on shows the host
    stats: dict[str, Any] = {}
    for name in sorted({k for r in judged for k in judged_numbers(r)}):
        iv = interval(judged_numbers(r).get(name) for r in judged)
        if iv is not None:
            low, high = iv.low, iv.high
            if name == "slo_attainment" and low is not None and high is not None:  # a share: within [0, 1]
                low, high = max(low, 0.0), min(high, 1.0)
            stats[name] = {"mean": iv.mean, "low": low, "high": high, "n": iv.n}
    parts = [
        f"{name} {st['mean']:.4g}" + (f" [{st['low']:.4g}, {st['high']:.4g}]" if st["low"] is not None else "")
        for name, st in stats.items()
    ]
    unjudged = [r for r in rows if behind(r) is not None]
    note = f"{sum(met)} of {len(rows)} fresh runs at {value:g} met the SLO"
    if unjudged:
        note += f" ({len(unjudged)} not judged: {unjudged_note(unjudged)})"
    note += (": " + ", ".join(parts) + " (mean [95% interval over the runs])") if parts else ""
    past = past_the_slo(rows[0].get("search") or {} if rows else {}, stats)
    if past:
        note += f"; the interval reaches past the SLO ({', '.join(past)}): more confirm_repeats narrow it"
    confirmed = bool(rows) and all(met)
    return {
        "value": value,
        "runs": len(rows),
        "met": sum(met),
        "not_representative": len(unjudged),
        "suggested_time_scale": suggested_time_scale(unjudged),
        "confirmed": confirmed,
        "statistics": stats,
        "note": note,
    }


def suggested_time_scale(rows: Sequence[Mapping[str, Any]]) -> float | None:
    """The largest time scale the lag verdicts of `rows` suggest (None: none suggests one)."""
    scales = [float(s) for r in rows if isinstance(s := (behind(r) or {}).get("suggested_time_scale"), (int, float))]
    return max(scales) if scales else None


def unjudged_note(rows: Sequence[Mapping[str, Any]]) -> str:
    """Why runs were not judged, and the fix: one clause for all of them."""
    scale = suggested_time_scale(rows)
    fix = (
        f"rerun at time_scale {scale:g} or above"
        if scale is not None
        else "fewer concurrent requests or more free cores"
    )
    return f"{NOT_REPRESENTATIVE} (its latencies are the host's). Fix: {fix}"


def past_the_slo(tag: Mapping[str, Any], stats: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Which intervals reach past what the SLO allows (a latency's upper end above it, an attainment's
    lower end below the share needed): the runs met it, but their mean is not sure to."""
    out = []
    attain = stats.get("slo_attainment") or {}
    need = float(tag.get("attainment") or 0.9)
    if attain.get("low") is not None and attain["low"] < need:
        out.append(f"slo_attainment {attain['low']:.4g} < {need:g}")
    for key, ceiling in (tag.get("slo") or {}).items():
        st = stats.get(f"{tag.get('criterion')}_{LATENCY_KIND.get(key, key)}_ms") or {}
        if st.get("high") is not None and st["high"] > float(ceiling):
            out.append(f"{key} {st['high']:.4g} > {float(ceiling):g}")
    return out


def confirm_id(probe: str) -> str:
    return probe + CONFIRM
