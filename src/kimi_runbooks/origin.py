"""Where a number came from: measured (with the run id), emulated, or a published reference.

One spelling everywhere, so a table, a figure and a report never disagree about a row's origin.
"""

from __future__ import annotations

REHEARSAL_LABEL = "REAL SGLANG, TINY MODEL"
"""Numbers from SGLang itself serving a tiny random-weight checkpoint on the CPU (launcher sglang-cpu):
real server behaviour, no hardware and no real model: neither EMULATED nor a hardware measurement."""


REHEARSAL_SOURCE = REHEARSAL_LABEL.lower().replace("sglang", "SGLang")


def source_label(emulated: bool, run_id: str | None = None, *, upper: bool = False, rehearsal: bool = False) -> str:
    """ "emulated", "real SGLang, tiny model" or "measured" (+ " (run <id>)"); upper=True gives "EMULATED" /
    "REAL SGLANG, TINY MODEL", the shouting forms tables use so no such row is mistaken for hardware."""
    if rehearsal:
        label = REHEARSAL_LABEL if upper else REHEARSAL_SOURCE
    else:
        label = "emulated" if emulated else "measured"
        if upper and emulated:
            label = label.upper()
    return f"{label} (run {run_id})" if run_id else label
