"""Whether one operating-point probe met its SLO, and what its confirmation runs show.

A probe is judged on its own search tag (operating_point.search_tag): at least `attainment` of its
requests good (goodput.py), or bench_serving's statistic of each SLO'd latency within it, and never
on fewer requests than the percentile needs (`min_requests`: n >= ln(1 - c) / ln(p), the
order-statistic bound). The confirmation runs at the value found (operating_point.confirm) are
summed up by `confirmation_of`: how many met, and each judged statistic's mean and 95% interval.
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


def judge(row: Mapping[str, Any]) -> tuple[bool, str]:
    """(met, why) for one probe row, from its own search tag."""
    tag = row.get("search") or {}
    status = row.get("status")
    if status != "ok":
        return False, f"{status}: {row.get('error') or 'no result'}"
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
    stats: dict[str, Any] = {}
    for name in sorted({k for r in rows for k in judged_numbers(r)}):
        iv = interval(judged_numbers(r).get(name) for r in rows)
        if iv is not None:
            low, high = iv.low, iv.high
            if name == "slo_attainment" and low is not None and high is not None:  # a share: within [0, 1]
                low, high = max(low, 0.0), min(high, 1.0)
            stats[name] = {"mean": iv.mean, "low": low, "high": high, "n": iv.n}
    parts = [
        f"{name} {st['mean']:.4g}" + (f" [{st['low']:.4g}, {st['high']:.4g}]" if st["low"] is not None else "")
        for name, st in stats.items()
    ]
    note = f"{sum(met)} of {len(rows)} fresh runs at {value:g} met the SLO"
    note += (": " + ", ".join(parts) + " (mean [95% interval over the runs])") if parts else ""
    past = past_the_slo(rows[0].get("search") or {} if rows else {}, stats)
    if past:
        note += f"; the interval reaches past the SLO ({', '.join(past)}): more confirm_repeats narrow it"
    confirmed = bool(rows) and all(met)
    return {
        "value": value,
        "runs": len(rows),
        "met": sum(met),
        "confirmed": confirmed,
        "statistics": stats,
        "note": note,
    }


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
