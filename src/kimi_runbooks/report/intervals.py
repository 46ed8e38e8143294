"""A repeated scenario in the report: the mean ± its 95% interval and N (speed/repeats.py), and, across
run folders, whether a difference between two runs' means is noise or a real change."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..speed.repeats import MAIN_METRICS, Difference, difference
from .html_parts import DASH, Column, esc, fmt_number, missing

NOTE = (
    "Scenarios run more than once (repeats) show the mean of their N runs ± the half-width of a 95% "
    "interval for that mean (Student t, N-1 degrees of freedom); one run gives no interval and says so. "
    "Each repeat sent new prompts (its own seed) and flushed the server's prefix cache after its warm-up, "
    "where the server has /flush_cache."
)


def _float(value: Any) -> float | None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def runs_of(row: Any) -> int:
    """How many ok runs a row's figures are the mean of (1 for a row from before repeats)."""
    n = _float(row.get("n_runs"))
    return int(n) if n else 1


def half_width(row: Mapping[str, Any], key: str) -> float | None:
    lo, hi = _float(row.get(f"{key}_ci_low")), _float(row.get(f"{key}_ci_high"))
    return None if lo is None or hi is None else (hi - lo) / 2.0


def repeated(rows: Sequence[Mapping[str, Any]]) -> bool:
    """True when some scenario asked for more than one run."""
    return any((_float(r.get("repeats")) or 1) > 1 or runs_of(r) > 1 for r in rows)


def mean_cell(key: str, header: str) -> Column:
    """A main metric as `mean ± half-width` (or `(1 run: no interval)` where repeats were asked for)."""

    def render(value: Any, row: Mapping[str, Any]) -> str:
        if missing(value):
            return DASH
        half = half_width(row, key)
        if half is not None:
            return f'{fmt_number(value)} <span class="note">± {fmt_number(half)}</span>'
        if (_float(row.get("repeats")) or 1) > 1 and row.get("status") == "ok":
            return f'{fmt_number(value)} <span class="note">({runs_of(row)} run: no interval)</span>'
        return fmt_number(value)

    return Column(key, header, "num", render=render)


def with_intervals(columns: Sequence[Column]) -> list[Column]:
    """The speed table's columns with the main metrics as mean ± interval and an N column after status."""
    out: list[Column] = []
    for column in columns:
        out.append(mean_cell(column.key, column.header + " mean ± 95%") if column.key in MAIN_METRICS else column)
        if column.key == "status":
            out.append(Column("n_runs", "N (runs)", "int"))
    return out


def _summary(row: Any, key: str) -> tuple[float, float | None, int] | None:
    mean = _float(row.get(key))
    if mean is None:
        return None
    sd, n = _float(row.get(f"{key}_sd")), _float(row.get(f"{key}_n"))
    return (mean, sd, int(n)) if sd is not None and n else (mean, None, 1)


def judge(base: Any, row: Any, key: str) -> Difference | None:
    """`row` against `base` (mappings or pandas rows) on one metric (Welch, speed.repeats.difference);
    None when either lacks it."""
    a, b = _summary(base, key), _summary(row, key)
    return None if a is None or b is None else difference(a, b)


def judged_cell(value: Any, row: Mapping[str, Any]) -> str:
    if not isinstance(value, Difference):
        return DASH
    cls = {"noise": "meh", "real change": "ok"}.get(value.verdict, "meh")
    return f'<span class="{cls}" title="{esc(value.reason)}">{esc(value.verdict)}</span>'
