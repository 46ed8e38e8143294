"""When the /metrics sampler scrapes, on timelines shaped like bench_serving's: client start-up, the
warm-up, its 1 s pause, the measured requests (issue 40 item 6: the fast scrapes were spent on the
warm-up and a 0.14 s measured stretch got none)."""

from __future__ import annotations

from collections.abc import Callable

from kimi_runbooks.speed.scrape_schedule import FIRST_INTERVAL_S, SAMPLE_INTERVAL_S, ScrapeSchedule

SCRAPE_COST_S = 0.004
"""One scrape of a local server on a loaded machine."""


def scrape_times(busy: Callable[[float], bool], until: float, warmup_requests: int = 1) -> list[float]:
    """The times the schedule scrapes at over a timeline where busy(t) says the server is busy."""
    schedule, t, times = ScrapeSchedule(warmup_requests), 0.0, []
    while t < until:
        times.append(t)
        t += SCRAPE_COST_S + schedule.after(t, busy(t))
    return times


def within(times: list[float], start: float, end: float) -> int:
    return sum(1 for t in times if start <= t < end)


def bench_serving(startup: float, warmup: float, measured: float) -> tuple[Callable[[float], bool], float]:
    """busy(t) of one warm-up request then the measured stretch after bench_serving's 1 s pause."""
    start = startup + warmup + 1.0
    return (lambda t: startup <= t < startup + warmup or start <= t < start + measured), start


def test_the_measured_stretch_after_the_warm_up_is_scraped_fast() -> None:
    busy, start = bench_serving(startup=3.0, warmup=0.03, measured=0.14)
    times = scrape_times(busy, start + 2)
    assert within(times, start, start + 0.14) >= 5  # old schedule: 0 (interval ~0.3 s by then)


def test_a_long_warm_up_still_leaves_the_measured_start_fast() -> None:
    """A warm-up long enough for the interval to reach its steady value: the idle pause after it is
    still seen and the measured requests start with fast scrapes."""
    busy, start = bench_serving(startup=1.0, warmup=4.0, measured=0.2)
    times = scrape_times(busy, start + 2)
    assert within(times, start, start + 0.2) >= 5


def test_a_rate_paced_measured_stretch_is_not_rescraped_fast_after_every_gap() -> None:
    """Once the measured stretch started, idle gaps between paced requests (0.1 s busy every 1 s)
    are scraped at the steady interval: about 2 scrapes a second, not 50."""
    start = 2.0 + 0.03 + 1.0

    def busy(t: float) -> bool:
        return 2.0 <= t < 2.03 or (t >= start and (t - start) % 1.0 < 0.1)

    times = scrape_times(busy, start + 30)
    later = within(times, start + 10, start + 30)
    assert later <= 20 / SAMPLE_INTERVAL_S * 1.1


def test_without_warm_up_the_first_busy_stretch_is_the_measured_one() -> None:
    schedule = ScrapeSchedule(warmup_requests=0)
    schedule.after(0.0, False)
    assert schedule.after(0.5, True) == FIRST_INTERVAL_S and schedule.measured


def test_a_multi_turn_warm_up_is_not_taken_for_the_measured_stretch() -> None:
    """A multi-turn warm-up sends its rounds milliseconds apart: not the pause before measuring."""
    schedule = ScrapeSchedule(warmup_requests=1)
    t = 0.0
    for _ in range(3):  # three rounds, 0.1 s each, 5 ms apart
        schedule.after(t, True)
        schedule.after(t + 0.1, False)
        t += 0.105
    assert not schedule.measured
    assert schedule.after(t + 1.0, True) == FIRST_INTERVAL_S and schedule.measured
