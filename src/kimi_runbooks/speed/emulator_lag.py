"""Did the emulator keep up with its own latency model during a scenario? If not, say so.

On a small host (2 cores, many streams, a small time scale) the emulator wakes its steps late
and then sends the late tokens in a burst (emulator/lag.py): the client measures a TPOT far under
the model's and the server's mean running count drops to ~1, which would read as "64 (1
effective)" with nothing saying why. The emulator counts its steps, the late ones and the seconds
they were late (``emulator:schedule_*_total`` in /metrics); the metrics sampler reads them before
and after the scenario (server_metrics.py) and ``judge`` turns their change into a verdict: a
scenario with more than BEHIND_SHARE of its steps late is not representative, with the time scale
that would give the host room (every step that much longer). A real server has no such counters:
no verdict, nothing shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

KEYS = {
    "emulator:schedule_steps": "lag_steps",
    "emulator:schedule_late_steps": "lag_late_steps",
    "emulator:schedule_lag_seconds": "lag_seconds",
    "emulator:schedule_step_seconds": "lag_step_seconds",
}
"""/metrics family (emulator/lag.py's FAMILIES: a stage reads the emulator's /metrics, never imports
it) -> the key a metrics sample keeps its counter under."""
BEHIND_SHARE = 0.1
"""More than this share of a scenario's steps late: the emulator did not keep up (not representative)."""


def parse_lag(family: str, value: float, into: dict[str, float]) -> None:
    """Keep one emulator lag counter of a /metrics scrape (other families are ignored)."""
    key = KEYS.get(family)
    if key is not None:
        into[key] = into.get(key, 0.0) + float(value)


def lag_change(samples: Sequence[Mapping[str, Any]]) -> dict[str, float] | None:
    """The counters' change from the first sample that has them to the last (None: no emulator
    counters, or no step ran in between)."""
    having = [s for s in samples if isinstance(s.get("lag_steps"), (int, float))]
    if len(having) < 2:
        return None
    first, last = having[0], having[-1]
    change = {key: float(last.get(key, 0.0)) - float(first.get(key, 0.0)) for key in KEYS.values()}
    return change if change["lag_steps"] > 0 else None


def judge(change: Any, time_scale: float | None) -> dict[str, Any] | None:
    """The scenario's lag verdict from a lag_change (anything else: None): steps, late share, mean lag
    and step (ms on the emulator's clock), `behind` and, when behind, `reason` with the fix."""
    if not isinstance(change, Mapping) or not change.get("lag_steps"):
        return None
    steps = change["lag_steps"]
    late_share = change["lag_late_steps"] / steps
    mean_lag_ms = 1000.0 * change["lag_seconds"] / steps
    mean_step_ms = 1000.0 * change["lag_step_seconds"] / steps
    out: dict[str, Any] = {
        "steps": int(steps),
        "late_share": round(late_share, 4),
        "mean_lag_ms": round(mean_lag_ms, 3),
        "mean_step_ms": round(mean_step_ms, 3),
        "behind": late_share > BEHIND_SHARE,
    }
    if out["behind"]:
        scale = float(time_scale) if time_scale and time_scale > 0 else 1.0
        out["suggested_time_scale"] = suggested_time_scale(scale, mean_step_ms, mean_lag_ms)
        out["reason"] = _reason(late_share, mean_lag_ms, mean_step_ms, scale, out["suggested_time_scale"])
    return out


def suggested_time_scale(scale: float, mean_step_ms: float, mean_lag_ms: float) -> float | None:
    """A time scale giving every step room for the lag seen (at least twice the current one); None
    when the run was already at 1 (real time: slowing the clock further would not model the server)."""
    if scale >= 1.0:
        return None
    factor = max(2.0, math.ceil((mean_step_ms + mean_lag_ms) / mean_step_ms)) if mean_step_ms > 0 else 2.0
    return min(round(scale * factor, 4), 1.0)


def _reason(late: float, lag_ms: float, step_ms: float, scale: float, suggested: float | None) -> str:
    fix = (
        f"Fix: run it at time_scale {suggested:g} (now {scale:g}) or with fewer concurrent requests"
        if suggested is not None
        else "Fix: fewer concurrent requests, or a host with more free cores"
    )
    return (
        f"not representative: the emulator fell behind its latency model on {late:.0%} of its steps "
        f"(woke {lag_ms:.1f} ms late on average for {step_ms:.1f} ms steps, emulator clock), so its "
        f"latencies and concurrency are the host's, not the model's. {fix}"
    )
