"""One bench_serving run of a scenario: through the stage's warm worker when it can take it, else as its
own process group, its request counter reported as progress while it runs."""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path
from typing import Protocol

from ..procs import start_session, stop_group
from ..progress import latest_count, report_progress
from ..rundir import RunFolder
from ..tools.scripts import script
from .argv import BENCH_MODULE
from .worker import BenchWorker, WorkerUnavailable

log = logging.getLogger(__name__)

PROGRESS_POLL_S = 1.0
"""How often a running client's log is read for its request counter."""


class ClientRun(Protocol):
    """What execute reads of speed.run.SpeedRun."""

    @property
    def folder(self) -> RunFolder: ...
    @property
    def python(self) -> str: ...
    @property
    def child_env(self) -> dict[str, str]: ...
    @property
    def worker(self) -> BenchWorker | None: ...


def execute(
    run: ClientRun,
    argv: list[str],
    log_path: Path,
    timeout: float,
    label: str,
    sessions: bool = False,
    timings: Path | None = None,
) -> tuple[int | None, bool]:
    """The scenario through the stage's worker when it can take it (the bench env's own python,
    no command prefix), else as its own process; the same arguments either way. A timed session
    replay (`sessions`) run as its own process goes through session_replay.py, which the worker
    applies itself (speed/sessions.py). Only the worker times each request's first answer token
    (`timings`, speed/answer_latency.py)."""
    worker = run.worker
    local = argv[:3] == [run.python, "-m", BENCH_MODULE]
    if worker is not None and worker.unavailable is None and local:
        try:
            poll = lambda: report_requests(run.folder, log_path, label)  # noqa: E731
            return worker.run(argv[3:], log_path, timeout, poll=poll, timings=timings)
        except WorkerUnavailable as exc:
            log.warning("bench worker unavailable (%s): one process per scenario", exc)
    if sessions and local:
        argv = [run.python, str(script("session_replay.py")), *argv[3:]]
    return run_child(run.folder, argv, log_path, run.child_env, timeout, label=label)


def run_child(
    folder: RunFolder, argv: list[str], log_path: Path, env: dict[str, str], timeout: float, label: str = ""
) -> tuple[int | None, bool]:
    """Run argv in its own process group, output to log_path (redacted after); (returncode, timed_out).

    While it runs, the request counter bench_serving prints ("37/80") is reported as progress."""
    deadline = time.monotonic() + timeout
    with folder.open_log(log_path) as out:
        proc = start_session(argv, stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        try:
            while True:
                try:
                    return proc.wait(timeout=PROGRESS_POLL_S), False
                except subprocess.TimeoutExpired:
                    if time.monotonic() > deadline:
                        stop_group(proc)
                        return proc.returncode, True
                    report_requests(folder, log_path, label)
        except BaseException:
            stop_group(proc, grace_s=0)
            raise


def report_requests(folder: RunFolder, log_path: Path, label: str) -> None:
    """The latest "done/total [" counter in the client's log, as a progress event."""
    count = latest_count(log_path, tail_bytes=2000)
    if count:
        done, total = count
        report_progress(folder, "speed", f"{label}: {done}/{total} requests", key=label)
