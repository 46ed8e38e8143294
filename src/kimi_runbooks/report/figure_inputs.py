"""What the report's per-scenario figures (per-turn curves, operating-point frontiers) read the same way:
the label naming where their numbers come from, which values can be drawn at all, and the rule that a
figure with too few points is said in a note instead of drawn.

Free of plotly, so the speed section's table lines, which need the same label, cost no plotly import.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sized
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd

from ..origin import REHEARSAL_SOURCE, source_label


def figure_origin(speed: pd.DataFrame | None, emulated: bool, run_id: str | None) -> str:
    """EMULATED or measured (with the run id), and on an emulated run whose speed rows were put on the
    latency model's clock (speed.timescale.rescale), that the figure shows them at time scale 1."""
    rehearsal = speed is not None and "label" in speed.columns and bool((speed["label"] == REHEARSAL_SOURCE).any())
    origin = source_label(emulated, run_id, upper=True, rehearsal=rehearsal)
    if emulated and speed is not None and "rescaled" in speed.columns and bool(speed["rescaled"].any()):
        origin += ", rescaled to time scale 1"
    return origin


def finite_number(value: Any) -> float | None:
    """A finite int or float (not a bool) as a float; None for anything a figure cannot place."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


Figure = TypeVar("Figure")


@dataclass(frozen=True)
class TooFew:
    """The least number of usable points a per-scenario figure is drawn from, and the note's words
    when a scenario has fewer: "<scenario>: <figure> not drawn: <n> <points>, <needs> <minimum> (<hint>)"."""

    minimum: int
    figure: str
    points: str
    needs: str
    hint: str

    def drawn_or_noted(
        self, candidates: Iterable[tuple[str, Sized, Callable[[], Figure]]]
    ) -> tuple[list[Figure], list[str]]:
        """(the figures of the scenarios with enough points, a note per scenario without), from
        (scenario, its usable points, what draws them) triples; nothing is drawn for a noted one."""
        figures: list[Figure] = []
        notes: list[str] = []
        for scenario, points, draw in candidates:
            if len(points) < self.minimum:
                notes.append(
                    f"{scenario}: {self.figure} not drawn: {len(points)} {self.points}, {self.needs} "
                    f"{self.minimum} ({self.hint})"
                )
            else:
                figures.append(draw())
        return figures, notes
