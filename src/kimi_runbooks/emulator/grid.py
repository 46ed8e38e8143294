"""Piecewise-linear lookup of a latency sampled on a grid (the performance model's prediction).

Between grid points a value is interpolated linearly; beyond the grid it continues the nearest
segment's slope, so a request larger than any sample still costs more rather than the same.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


def _segment(xs: Sequence[float], x: float) -> tuple[int, float]:
    """Index i of the segment [xs[i], xs[i+1]] that holds (or is nearest to) x, and x's fraction along it."""
    i = min(max(bisect_right(xs, x) - 1, 0), len(xs) - 2)
    span = xs[i + 1] - xs[i]
    return i, (x - xs[i]) / span if span else 0.0


def interpolate(points: Sequence[tuple[float, float]], x: float) -> float:
    """y at x from (x, y) points sorted by x."""
    if len(points) == 1:
        return points[0][1]
    xs = [p[0] for p in points]
    i, f = _segment(xs, x)
    return points[i][1] + f * (points[i + 1][1] - points[i][1])


def interpolate_grid(
    xs: Sequence[float], ys: Sequence[float], values: Sequence[Sequence[float]], x: float, y: float
) -> float:
    """Bilinear z at (x, y) from z = values[i][j] sampled at (xs[i], ys[j]), both axes sorted."""
    rows = [interpolate(list(zip(ys, row)), y) for row in values]
    return interpolate(list(zip(xs, rows)), x)
