"""The rule every per-scenario figure follows: too few points is a note naming why, never a figure."""

from __future__ import annotations

import math

from kimi_runbooks.report.figure_inputs import TooFew, finite_number

RULE = TooFew(3, "curve", "point(s) with a value", "a curve needs", "run longer")


def test_a_scenario_with_too_few_points_is_noted_and_never_drawn():
    drawn: list[str] = []

    def draw(name: str):
        return lambda: drawn.append(name) or f"figure of {name}"

    figures, notes = RULE.drawn_or_noted(
        [("short", [1, 2], draw("short")), ("long", [1, 2, 3], draw("long")), ("empty", [], draw("empty"))]
    )
    assert figures == ["figure of long"]
    assert drawn == ["long"]
    assert notes == [
        "short: curve not drawn: 2 point(s) with a value, a curve needs 3 (run longer)",
        "empty: curve not drawn: 0 point(s) with a value, a curve needs 3 (run longer)",
    ]


def test_finite_number_refuses_what_a_figure_cannot_place():
    assert finite_number(2) == 2.0
    assert finite_number(1.5) == 1.5
    for bad in (True, None, "3", math.nan, math.inf):
        assert finite_number(bad) is None
