"""Sub-millisecond sleeps for the token schedule.

asyncio's epoll loop rounds every timeout UP to a whole millisecond, so a task that
sleeps "until the next token" wakes 0-1 ms late, and because the lateness carries
into the next sleep the gaps settle at ITL + (processing time) most of the time: a
10 ms ITL measured as a ~10.4 ms median.  Here a helper thread waits on a condition
variable (nanosecond timeouts) and wakes the loop through call_soon_threadsafe,
which returns from epoll at once.  Long waits still start as an ordinary
asyncio.sleep, so the thread only handles the last few milliseconds. A deadline already
past still yields to the loop once, as a real server keeps answering while it decodes.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections import defaultdict

_COARSE_MARGIN = 0.003  # seconds left for the precise thread after a coarse asyncio.sleep
_BATCH_WINDOW = 50e-6  # deadlines this close together are woken by one callback


class PreciseTimer:
    """Wakes asyncio tasks at time.monotonic() deadlines; one shared daemon thread."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._cond = threading.Condition()
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    async def sleep_until(self, deadline: float) -> None:
        delay = deadline - time.monotonic()
        if delay <= 0:
            # behind schedule (a loaded machine): still yield, or a request's whole stream runs in one
            # go and /metrics, other streams and new requests wait for it to end
            await asyncio.sleep(0)
            return
        if delay > 2 * _COARSE_MARGIN:
            await asyncio.sleep(delay - _COARSE_MARGIN)
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._cond:
            self._start_thread()
            heapq.heappush(self._heap, (deadline, next(self._seq), loop, future))
            self._cond.notify()
        await future

    def _start_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="emulator-clock", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                wait = self._heap[0][0] - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                due = self._pop_due(time.monotonic() + _BATCH_WINDOW)
            self._wake(due)

    def _pop_due(self, limit: float) -> list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]:
        due = []
        while self._heap and self._heap[0][0] <= limit:
            _, _, loop, future = heapq.heappop(self._heap)
            due.append((loop, future))
        return due

    @staticmethod
    def _wake(due: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = defaultdict(list)
        for loop, future in due:
            by_loop[loop].append(future)
        for loop, futures in by_loop.items():
            try:
                loop.call_soon_threadsafe(_resolve, futures)
            except RuntimeError:  # that loop has closed; nobody is waiting any more
                pass


def _resolve(futures: list[asyncio.Future[None]]) -> None:
    for future in futures:
        if not future.done():
            future.set_result(None)


TIMER = PreciseTimer()


async def sleep_until(deadline: float) -> None:
    """Return as close to ``deadline`` (time.monotonic()) as the machine allows."""
    await TIMER.sleep_until(deadline)
