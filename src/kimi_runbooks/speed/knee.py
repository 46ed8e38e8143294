"""The knee sweep before an operating-point bisection: from one stream up until throughput stops growing.

As GuideLLM's sweep starts from a synchronous run and goes up to where the server saturates, the
values low, 2 low, 4 low, ... high are probed in turn until one misses the SLO or adds less than
MIN_GAIN output throughput over the one before; the bisection then searches only what is left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .probe_verdict import judge

MIN_GAIN = 0.05
"""The knee sweep stops once a value adds less than this share of output throughput (saturation.MIN_GAIN)."""


def sweep_values(values: Sequence[float]) -> list[float]:
    """low, 2 low, 4 low, ... (each the grid value at or below it), then high: the knee sweep's values."""
    out: list[float] = []
    target = values[0]
    while target < values[-1]:
        below = max(v for v in values if v <= target + 1e-9)
        if not out or below > out[-1]:
            out.append(below)
        target *= 2
    return [*out, values[-1]] if out[-1] != values[-1] else out


def throughput(row: Mapping[str, Any]) -> float | None:
    value = (row.get("metrics") or {}).get("output_throughput")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _knee(before: tuple[float, float | None], value: float, now: float | None) -> str | None:
    """The knee note when `value` added less than MIN_GAIN output throughput over `before`, else None."""
    if not before[1] or now is None or (now - before[1]) / before[1] >= MIN_GAIN:
        return None
    gain = (now - before[1]) / before[1]
    return (
        f"saturation knee at {before[0]:g}: output throughput {before[1]:.0f} tok/s, {gain:+.0%} at {value:g} "
        f"(less than {MIN_GAIN:.0%}): the search stays at or below the knee"
    )


def knee_sweep(
    values: Sequence[float], row_at: Callable[[float], Mapping[str, Any]]
) -> tuple[list[float], float | None, str]:
    """(the grid values left to bisect, the knee or None, the knee's note or ""), the sweep's rows from
    `row_at`: it stops at the first value that misses the SLO or adds < MIN_GAIN throughput."""
    previous: tuple[float, float | None] | None = None
    for value in sweep_values(values):
        row = row_at(value)
        if not judge(row)[0]:
            low = previous[0] if previous else value
            return [v for v in values if low <= v <= value], None, ""
        now = throughput(row)
        note = _knee(previous, value, now) if previous is not None else None
        if previous is not None and note:
            return [previous[0]], previous[0], note
        previous = (value, now)
    return [values[-1]], None, ""


def knee_from_rows(sweep: Sequence[Mapping[str, Any]]) -> tuple[float | None, str]:
    """(the knee, its note) the sweep's rows show, by knee_sweep's rule: for a search rebuilt from rows."""
    ordered = sorted(sweep, key=lambda r: float((r.get("search") or {}).get("value") or 0.0))
    for before, now in zip(ordered, ordered[1:]):
        knee, value = float(before["search"]["value"]), float(now["search"]["value"])
        note = _knee((knee, throughput(before)), value, throughput(now)) if judge(now)[0] else None
        if note:
            return knee, note
    return None, ""
