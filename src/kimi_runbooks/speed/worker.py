"""One long-lived bench_serving worker per speed stage, instead of a new Python per scenario.

Each scenario used to start a Python that imports torch and sglang and loads a tokenizer: about
11 s around a sub-second benchmark on this machine, minutes of rented GPU time over a published
set. `BenchWorker` starts bench_worker_main.py in the bench env once; each scenario is the same
argument list the CLI takes, run by SGLang's own `cli_main` in that process, its output in the
scenario's log. A worker that dies mid-scenario fails that scenario (its exit code, the log's
last lines); the next scenario starts a new worker. A timed-out scenario stops the worker's
process group, as the CLI child was stopped before. When the worker cannot start (an SGLang
without `cli_main`, a broken env) the runner falls back to one process per scenario.
"""

from __future__ import annotations

import json
import logging
import selectors
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..procs import start_session, stop_group
from ..rundir import RunFolder

log = logging.getLogger(__name__)

WORKER_SCRIPT = Path(__file__).with_name("bench_worker_main.py")
START_TIMEOUT_S = 180.0
"""Importing torch and sglang on a cold 2-core machine takes well under a minute; generous."""
POLL_S = 1.0


class WorkerUnavailable(RuntimeError):
    """The worker could not start; the runner uses one process per scenario instead."""


class BenchWorker:
    """A bench_serving worker in the bench env (see module doc); `close()` when the stage ends."""

    def __init__(self, python: str, env: dict[str, str], folder: RunFolder) -> None:
        self.python, self.env, self.folder = python, env, folder
        self.proc: subprocess.Popen[str] | None = None
        self.unavailable: str | None = None
        self.starts = 0

    def _start(self) -> subprocess.Popen[str]:
        self.folder.mkdir(self.folder.logs)
        err: IO[str] = (self.folder.logs / "bench-worker.log").open("a", encoding="utf-8")
        try:
            proc = start_session(
                [self.python, str(WORKER_SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=self.env,
                text=True,
                bufsize=1,
            )
        finally:
            err.close()
        hello = self._read_line(proc, time.monotonic() + START_TIMEOUT_S, None)
        ready = _json(hello) if hello else None
        if not ready or not ready.get("ready"):
            stop_group(proc, grace_s=0)
            why = (ready or {}).get("error") or f"no answer within {START_TIMEOUT_S:g} s (exit {proc.poll()})"
            self.unavailable = str(why)
            raise WorkerUnavailable(self.unavailable)
        self.starts += 1
        log.info("bench worker %s ready (%s imported in %ss)", proc.pid, ready.get("module"), ready.get("import_s"))
        return proc

    def run(
        self, args: list[str], log_path: Path, timeout: float, poll: Callable[[], None] | None = None
    ) -> tuple[int | None, bool]:
        """(returncode, timed_out) of one benchmark with the CLI's `args`; output in log_path."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None
        deadline = time.monotonic() + timeout
        try:
            proc.stdin.write(json.dumps({"args": args, "log": str(log_path)}) + "\n")
            proc.stdin.flush()
            line = self._read_line(proc, deadline, poll)
        except BaseException:
            self._discard(proc)
            raise
        finally:
            if log_path.exists():
                self.folder.redact_file(log_path)  # bench_serving may print /server_info
        if line is None:
            if proc.poll() is None:  # still running at the deadline
                self._discard(proc)
                return proc.returncode, True
            self.proc = None  # died mid-scenario: this scenario failed, the next starts a new worker
            return proc.returncode if proc.returncode not in (None, 0) else 1, False
        answer = _json(line) or {}
        code = answer.get("returncode")
        return (int(code) if isinstance(code, int) else 1), False

    def probe(self, request: dict[str, Any], script: Path, log_path: Path, timeout: float) -> list[dict[str, Any]]:
        """token_probe.run_all(request) inside the worker (tokens.py); WorkerUnavailable or
        TimeoutError when it cannot answer (the caller then runs the probe as its own process)."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = self._start()
        proc = self.proc
        assert proc.stdin is not None
        proc.stdin.write(json.dumps({"probe": request, "script": str(script), "log": str(log_path)}) + "\n")
        proc.stdin.flush()
        line = self._read_line(proc, time.monotonic() + timeout, None)
        answer = _json(line) if line else None
        if answer is None or not isinstance(answer.get("results"), list):
            self._discard(proc)
            raise TimeoutError(f"the worker gave no token-probe answer within {timeout:g} s")
        return [r for r in answer["results"] if isinstance(r, dict)]

    def _read_line(self, proc: subprocess.Popen[str], deadline: float, poll: Callable[[], None] | None) -> str | None:
        """The worker's next reply line; None at EOF (it died) or past the deadline."""
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                if sel.select(timeout=min(POLL_S, left)):
                    line = proc.stdout.readline()
                    return line or None
                if proc.poll() is not None:
                    return None
                if poll is not None:
                    poll()

    def _discard(self, proc: subprocess.Popen[str]) -> None:
        stop_group(proc)
        self.proc = None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        stop_group(proc, grace_s=0)


def _json(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
