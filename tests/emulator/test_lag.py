"""The emulator measures how far it falls behind its own latency model (emulator/lag.py, issue 42
item 6): a host that cannot keep up shows in its /metrics, one that can does not."""

from __future__ import annotations

import asyncio
import time

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.engine import Engine, Job, Progress
from kimi_runbooks.emulator.lag import LATE_FLOOR_S, ScheduleLag


def _run(settings: EmulatorSettings, streams: int, tokens: int, hog_s: float) -> Engine:
    """`streams` requests of `tokens` tokens; a hog that holds the event loop `hog_s` at a time
    stands for a host whose CPU is busy elsewhere (0: none)."""
    engine = Engine(settings)

    async def one() -> None:
        job = Job.reserving(16, tokens, None, time.monotonic(), streaming=True)
        await engine.drain(job, Progress())

    async def hog(done: asyncio.Event) -> None:
        while not done.is_set():
            time.sleep(hog_s)  # the loop is stuck: every due step waits
            await asyncio.sleep(0)

    async def main() -> None:
        done = asyncio.Event()
        hogging = asyncio.create_task(hog(done)) if hog_s else None
        await asyncio.gather(*(one() for _ in range(streams)))
        done.set()
        if hogging is not None:
            await hogging

    asyncio.run(main())
    return engine


def test_a_step_is_late_past_half_its_length_and_the_floor() -> None:
    lag = ScheduleLag()
    lag.observe(due=10.0, woke=10.004, step=0.010)  # 4 ms late on a 10 ms step: on time
    lag.observe(due=10.0, woke=10.006, step=0.010)  # 6 ms late: late
    lag.observe(due=10.0, woke=10.0 + LATE_FLOOR_S * 0.9, step=0.001)  # under the floor: on time
    lag.observe(due=10.0, woke=9.999, step=0.010)  # early counts as no lag
    assert (lag.steps, lag.late_steps) == (4, 1)
    assert round(lag.lag_seconds, 6) == round(0.004 + 0.006 + LATE_FLOOR_S * 0.9, 6)
    assert round(lag.step_seconds, 6) == 0.031


def test_a_host_that_cannot_keep_up_shows_late_steps_in_metrics() -> None:
    # ~0.3-1 ms steps at this time scale; the hog holds the loop 15 ms at a time
    engine = _run(EmulatorSettings(time_scale=0.02, log_startup=False), streams=8, tokens=40, hog_s=0.015)
    lag = engine.metrics.lag
    assert lag.steps == 8 * 40
    assert lag.late_steps / lag.steps > 0.5, lag
    text = engine.metrics.render(0, 0, 0.0, 0)
    assert "emulator:schedule_steps_total{" in text
    assert "emulator:schedule_late_steps_total{" in text


def test_a_host_that_keeps_up_has_few_late_steps() -> None:
    engine = _run(EmulatorSettings(time_scale=1.0, log_startup=False), streams=2, tokens=12, hog_s=0.0)
    lag = engine.metrics.lag
    assert lag.steps == 2 * 12
    assert lag.late_steps / lag.steps <= 0.1, lag


def test_strict_mode_prints_no_lag_counters() -> None:
    engine = Engine(EmulatorSettings(strict_sglang=True, log_startup=False))
    assert "emulator:schedule" not in engine.metrics.render(0, 0, 0.0, 0)
