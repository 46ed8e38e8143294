"""Where a number came from: measured (with the run id), emulated, or a published reference.

One spelling everywhere, so a table, a figure and a report never disagree about a row's origin.
"""

from __future__ import annotations


def source_label(emulated: bool, run_id: str | None = None, *, upper: bool = False) -> str:
    """ "emulated" or "measured" (+ " (run <id>)"); upper=True gives "EMULATED", the shouting form
    tables use so an emulated row is never mistaken for hardware."""
    label = "emulated" if emulated else "measured"
    if upper and emulated:
        label = label.upper()
    return f"{label} (run {run_id})" if run_id else label
