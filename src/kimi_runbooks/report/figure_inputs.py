"""What the report's per-scenario figures (per-turn curves, operating-point frontiers) read the same way:
the label naming where their numbers come from, and which values can be drawn at all.

Free of plotly, so the speed section's table lines, which need the same label, cost no plotly import.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..origin import source_label


def figure_origin(speed: pd.DataFrame | None, emulated: bool, run_id: str | None) -> str:
    """EMULATED or measured (with the run id), and on an emulated run whose speed rows were put on the
    latency model's clock (speed.timescale.rescale), that the figure shows them at time scale 1."""
    origin = source_label(emulated, run_id, upper=True)
    if emulated and speed is not None and "rescaled" in speed.columns and bool(speed["rescaled"].any()):
        origin += ", rescaled to time scale 1"
    return origin


def finite_number(value: Any) -> float | None:
    """A finite int or float (not a bool) as a float; None for anything a figure cannot place."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)
