"""One real SGLang CPU server (or fleet) at a time on this machine, whichever test worker asks.

A real SGLang server on the CPU takes ~3 GB and, while it answers, most of a core; two test workers
each running one (the runbook on launcher sglang-cpu, the live differential suite, the router over
two workers) on a 2-core machine made each of them 3-4x slower (a 4-minute runbook passed 15 minutes
at a load average of 8). A test that starts one takes this machine-wide lock first; the other worker
keeps running the rest of the suite meanwhile.
"""

from __future__ import annotations

import fcntl
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK = Path(tempfile.gettempdir()) / "kimi-runbooks-real-sglang.lock"


@contextmanager
def real_sglang_slot(what: str) -> Iterator[float]:
    """Hold the machine's one slot for real SGLang servers; yields the seconds waited for it."""
    start = time.monotonic()
    with LOCK.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        waited = time.monotonic() - start
        if waited > 1:
            print(f"\n{what}: waited {waited:.0f} s for another test's real SGLang server to stop")
        try:
            yield waited
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
