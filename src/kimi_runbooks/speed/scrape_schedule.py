"""When the /metrics sampler scrapes next: fast at the start of the measured requests, wherever they fall.

bench_serving (sglang/benchmark/serving.py in 0.5.23) first sends `--warmup-requests` requests
(default 1, at most 32 output tokens each), waits for them, sleeps 1 s, and only then starts the
measured requests. A smoke scenario on a fast emulator measures for 0.1-0.2 s, less than one
steady-state interval, so the sampler scrapes fast at the start of every busy stretch (the server
reports running or queued requests) and slows down from there; while idle it scrapes often enough
to see the next stretch start. Once the measured stretch is recognised (the first busy stretch
after the warm-up and its pause) the fast start is not repeated: a rate-paced scenario, idle
between its requests, is then scraped at the steady interval, not fast after every gap.
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLE_INTERVAL_S = 0.5
"""Between two scrapes once a stretch has run a while: too rarely to load a server."""
FIRST_INTERVAL_S = 0.005
"""Between the first scrapes of a busy stretch; grows by GROWTH per scrape up to SAMPLE_INTERVAL_S
(reached after ~2 s, ~18 scrapes): a 0.1 s stretch gets a handful of samples, a long one costs a few
dozen scrapes more than a fixed interval."""
GROWTH = 1.3
IDLE_INTERVAL_S = 0.02
"""Between scrapes while the server is idle before the measured requests (client start-up, the pause
after the warm-up): a measured stretch is seen within this long of its start."""
WARMUP_PAUSE_S = 0.25
"""An idle gap at least this long after a busy stretch is bench_serving's 1 s pause after its
warm-up (the gaps between a multi-turn warm-up's rounds are milliseconds). Well under 1 s: the
first idle scrape may come up to SAMPLE_INTERVAL_S after the warm-up ends."""
BENCH_SERVING_WARMUP_REQUESTS = 1
"""bench_serving's --warmup-requests default (a scenario's warmup_requests None leaves it)."""


@dataclass
class ScrapeSchedule:
    """Feed it each scrape's time and whether the server was busy; it says how long to wait."""

    warmup_requests: int = BENCH_SERVING_WARMUP_REQUESTS
    interval_s: float = SAMPLE_INTERVAL_S
    first_interval_s: float = FIRST_INTERVAL_S
    idle_interval_s: float = IDLE_INTERVAL_S
    pause_s: float = WARMUP_PAUSE_S
    measured: bool = False
    """The measured stretch has started: the fast start is not repeated."""
    _wait: float = 0.0
    _busy: bool = False
    _seen_busy: bool = False
    _idle_since: float | None = None

    def __post_init__(self) -> None:
        self._wait = self._capped(self.idle_interval_s)

    def _capped(self, wait: float) -> float:
        return min(wait, self.interval_s)

    def after(self, t: float, busy: bool) -> float:
        """Seconds to wait after the scrape at `t` (seconds since the scenario started)."""
        if busy and not self._busy:
            self._start_stretch(t)
        elif busy or self.measured:
            self._wait = self._capped(self._wait * GROWTH)
        else:
            self._wait = self._capped(self.idle_interval_s)
        if self._busy and not busy:
            self._idle_since = t
        self._busy = busy
        return self._wait

    def _start_stretch(self, t: float) -> None:
        """Idle -> busy: the measured stretch when no warm-up is sent or it follows the warm-up's
        pause; a fast start unless the measured stretch had already started (a rate-paced gap)."""
        paused = self._idle_since is not None and t - self._idle_since >= self.pause_s
        if not self.measured:
            self.measured = self.warmup_requests <= 0 or (self._seen_busy and paused)
            self._wait = self._capped(self.first_interval_s)
        else:
            self._wait = self._capped(self._wait * GROWTH)
        self._seen_busy = True
