"""Was the server saturated? Effective concurrency against the requested one, queueing, a full pool.

llm-inference-bench marks cells the server could not run at the requested concurrency; GuideLLM
stops a sweep once the response rate stops keeping up. Here a scenario is flagged saturated when,
in its steady state (metrics.steady_window: the ramp-up and the tail of requests draining at the
end left out), the server ran fewer requests than asked (mean running, from /metrics, below 90%
of the requested concurrency), requests queued, or the KV pool was (nearly) full;
the client's own view (bench_serving's `concurrency`: sum of latencies / duration) is kept beside.
A sweep can stop early once throughput stops growing while the server queues.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EFFECTIVE_SHARE = 0.9
MIN_BUSY_SAMPLES = 3
"""Fewer samples taken while requests ran say too little about the mean: no effective concurrency."""
FULL_POOL = 0.95
MIN_GAIN = 0.05
"""A sweep stops (stop_when_saturated) when the next concurrency adds less than this throughput."""


def saturation(
    requested: int | None, num_prompts: int, server: Mapping[str, Any], client_concurrency: float | None = None
) -> dict[str, Any]:
    """Effective concurrency and why the scenario counts as saturated (empty reasons: it did not)."""
    target = min(requested or num_prompts, num_prompts)
    effective = server.get("mean_running")
    busy = server.get("steady_samples", server.get("busy_samples"))
    note = None
    if isinstance(busy, int) and busy < MIN_BUSY_SAMPLES:
        effective = None  # a scenario shorter than a few sampling intervals: the mean is noise
        note = f"{busy} samples in the steady state: too short to measure the effective concurrency"
    reasons = []
    if isinstance(effective, (int, float)) and server.get("samples") and effective < EFFECTIVE_SHARE * target:
        reasons.append(f"ran {effective:g} requests at a time on average, {target} requested")
    queued = server.get("steady_queued", server.get("peak_queued"))
    if isinstance(queued, (int, float)) and queued > 0:
        reasons.append(f"up to {queued:g} requests queued")
    usage = server.get("steady_token_usage", server.get("peak_token_usage"))
    if isinstance(usage, (int, float)) and usage >= FULL_POOL:
        reasons.append(f"KV pool {usage:.0%} full")
    return {
        "requested_concurrency": target,
        "effective_concurrency": effective,
        "client_concurrency": client_concurrency,
        "saturated": bool(reasons),
        "reasons": reasons,
        **({"note": note} if note else {}),
    }


def concurrency_label(requested: Any, effective: Any, emulator_behind: Any = None) -> str:
    """`64 (41 effective)` when the server ran fewer than asked, else just the requested number;
    `64 (1 effective: emulator behind its model)` when the emulator could not keep up
    (speed/emulator_lag.py), so a low count is never read as the model's."""
    if requested in (None, "") or (isinstance(requested, float) and requested != requested):
        return "–"
    behind = emulator_behind is True
    if isinstance(effective, (int, float)) and effective < EFFECTIVE_SHARE * float(requested):
        why = ": emulator behind its model" if behind else ""
        return f"{int(requested)} ({effective:.0f} effective{why})"
    return f"{int(requested)} (emulator behind its model)" if behind else str(int(requested))


def should_stop(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> bool:
    """True once a sweep saturates: the current step queued or ran below target while adding less
    than MIN_GAIN output throughput over the previous step of the same sweep."""
    if previous is None or not (current.get("saturation") or {}).get("saturated"):
        return False
    before = (previous.get("metrics") or {}).get("output_throughput")
    now = (current.get("metrics") or {}).get("output_throughput")
    if not isinstance(before, (int, float)) or not isinstance(now, (int, float)) or before <= 0:
        return False
    return (now - before) / before < MIN_GAIN
