"""How far the emulator falls behind its own latency model: scheduled against actual step times.

The engine sleeps each request to a deadline its latency model sets (the end of the prefill, then
one decode step after another, engine.py). A host that cannot keep up (many streams on few cores at
a small time scale) wakes them late; the deadline schedule then emits the late tokens in a burst,
so the client sees short token gaps, few requests running at once and a TPOT far under the
model's. Nothing in the answers shows it; this meter does. Each step records how late it woke
(actual - scheduled) and how long it was scheduled to take; a step is late when it woke more than
LATE_SHARE of its own length (and LATE_FLOOR_S) after its deadline.

The counters are /metrics families of their own (``emulator:schedule_*``, an allowed deviation
listed in deviations.py, printed only when the emulator marks itself); the speed stage reads their
change over a scenario (speed/emulator_lag.py) and the report marks a scenario the emulator did not
keep up with as not representative.
"""

from __future__ import annotations

from dataclasses import dataclass

LATE_SHARE = 0.5
"""A step woken more than half its own length after its deadline is late."""
LATE_FLOOR_S = 0.002
"""...and more than 2 ms: below that is the event loop's ordinary jitter, not a host falling behind."""

STEPS = "emulator:schedule_steps"
LATE_STEPS = "emulator:schedule_late_steps"
LAG_SECONDS = "emulator:schedule_lag_seconds"
STEP_SECONDS = "emulator:schedule_step_seconds"
FAMILIES = (STEPS, LATE_STEPS, LAG_SECONDS, STEP_SECONDS)
"""Counter family names (each printed with the ``_total`` suffix)."""


@dataclass
class ScheduleLag:
    """Counters of the engine's timed steps (see module doc)."""

    steps: int = 0
    late_steps: int = 0
    lag_seconds: float = 0.0
    step_seconds: float = 0.0

    def observe(self, due: float, woke: float, step: float) -> None:
        """One step scheduled to end at `due` (monotonic s), `step` seconds long, that woke at `woke`."""
        lag = max(woke - due, 0.0)
        self.steps += 1
        self.lag_seconds += lag
        self.step_seconds += max(step, 0.0)
        if lag > max(LATE_SHARE * step, LATE_FLOOR_S):
            self.late_steps += 1

    def lines(self, labels: str) -> list[str]:
        """The four counters in Prometheus text format."""
        out: list[str] = []
        for family, value, help_text in (
            (STEPS, self.steps, "Timed steps the emulator ran (prefill ends and decode steps)."),
            (LATE_STEPS, self.late_steps, "Steps that woke later than half their own length after their deadline."),
            (LAG_SECONDS, self.lag_seconds, "Seconds the steps woke after their deadlines, summed."),
            (STEP_SECONDS, self.step_seconds, "Seconds the latency model scheduled for the steps, summed."),
        ):
            out += [
                f"# HELP {family}_total {help_text}",
                f"# TYPE {family}_total counter",
                f"{family}_total{{{labels}}} {float(value)}",
            ]
        return out
