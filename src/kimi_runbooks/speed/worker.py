"""One long-lived bench_serving worker per speed stage, instead of a new Python per scenario.

Each scenario used to start a Python that imports torch and sglang and loads a tokenizer: about
8 s around a sub-second benchmark on this machine, minutes of rented GPU time over a published
set. `BenchWorker` talks to tools/scripts/bench_worker.py in the bench env: the one a runbook started
before its stages (shared_worker.py; sglang is imported by the time the speed stage begins), else
one it starts itself. Each scenario is the same argument list the CLI takes, run by SGLang's own
`cli_main` in that process, its output in the scenario's log. A worker that dies mid-scenario
fails that scenario (its exit code, the log's last lines); the next scenario starts a new worker.
A timed-out scenario stops the worker's process group, as the CLI child was stopped before. When
no worker can start (an SGLang without `cli_main`, a broken env) the runner falls back to one
process per scenario.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..procs import start_session, stop_group
from ..rundir import RunFolder
from ..tools.scripts import script
from .start_phases import mark

log = logging.getLogger(__name__)

WORKER_SCRIPT = script("bench_worker.py")
START_TIMEOUT_S = 180.0
"""Importing torch and sglang on a cold 2-core machine takes well under a minute; generous."""
POLL_S = 1.0


class WorkerUnavailable(RuntimeError):
    """The worker could not start; the runner uses one process per scenario instead."""


@dataclass
class _Channel:
    """Lines to and from one worker: its pipes, or a connection to a runbook's shared worker."""

    reader: IO[str]
    writer: IO[str]
    waitable: Any  # what the selector watches (the pipe, or the socket)
    pgid: int
    proc: subprocess.Popen[str] | None = None
    sock: socket.socket | None = None
    hello: dict[str, Any] | None = None
    """The worker's first line: import_s (wall seconds to import bench_serving), ready_cpu_s, pid, ..."""

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        try:
            os.killpg(self.pgid, 0)
            return True
        except OSError:
            return False

    def returncode(self) -> int:
        """The exit status of a worker of our own (reaped here), else 1: a runbook's is not ours to reap."""
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
        return code if code not in (None, 0) else 1

    def kill(self) -> None:
        if self.proc is not None:
            stop_group(self.proc)
        else:
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        for fh in (self.writer, self.reader):
            try:
                fh.close()
            except OSError:
                pass
        if self.sock is not None:
            self.sock.close()


class BenchWorker:
    """A bench_serving worker in the bench env (see module doc); `close()` when the stage ends.

    `shared` is a runbook's worker (shared_worker.describe); it is used when its python and
    offline mode are the stage's. `request_env` goes with every request (the stage's API key)."""

    def __init__(
        self,
        python: str,
        env: dict[str, str],
        folder: RunFolder,
        shared: dict[str, Any] | None = None,
        request_env: dict[str, str | None] | None = None,
    ) -> None:
        self.python, self.env, self.folder = python, env, folder
        self.shared, self.request_env = shared, dict(request_env or {})
        self.channel: _Channel | None = None
        self.unavailable: str | None = None
        self.starts = 0
        self.connected_to_shared = False
        self.benchmarks = 0

    # ------------------------------------------------------------------ starting

    def _open(self) -> _Channel:
        first = not self.connected_to_shared and not self.starts
        if self.shared is not None:
            shared, self.shared = self.shared, None  # one try: after a failure, a worker of our own
            channel = _connect(shared, time.monotonic() + START_TIMEOUT_S)
            if channel is not None:
                self.connected_to_shared = True
                if first:
                    mark(self.folder, "worker-ready", shared=True, **_timings(channel))
                return channel
        channel = self._spawn()
        if first:
            mark(self.folder, "worker-ready", shared=False, **_timings(channel))
        return channel

    def _spawn(self) -> _Channel:
        self.folder.mkdir(self.folder.logs)
        with self.folder.open_log(self.folder.logs / RunFolder.BENCH_WORKER_LOG, "a", drain_s=0) as err:
            proc = start_session(
                [self.python, str(WORKER_SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=self.env,
                text=True,
                bufsize=1,
            )
        assert proc.stdin is not None and proc.stdout is not None
        channel = _Channel(proc.stdout, proc.stdin, proc.stdout, proc.pid, proc=proc)
        hello = _read_line(channel, time.monotonic() + START_TIMEOUT_S, None)
        ready = _json(hello) if hello else None
        if not ready or not ready.get("ready"):
            stop_group(proc, grace_s=0)
            why = (ready or {}).get("error") or f"no answer within {START_TIMEOUT_S:g} s (exit {proc.poll()})"
            self.unavailable = str(why)
            raise WorkerUnavailable(self.unavailable)
        self.starts += 1
        log.info("bench worker %s ready (%s imported in %ss)", proc.pid, ready.get("module"), ready.get("import_s"))
        channel.hello = ready
        return channel

    def _channel(self) -> _Channel:
        if self.channel is None or not self.channel.alive():
            self.channel = self._open()
        return self.channel

    # ------------------------------------------------------------------ requests

    def _send(self, channel: _Channel, request: dict[str, Any]) -> None:
        channel.writer.write(json.dumps({**request, "env": self.request_env}) + "\n")
        channel.writer.flush()

    def run(
        self,
        args: list[str],
        log_path: Path,
        timeout: float,
        poll: Callable[[], None] | None = None,
        timings: Path | None = None,
    ) -> tuple[int | None, bool]:
        """(returncode, timed_out) of one benchmark with the CLI's `args`; output in log_path; each
        request's answer timing in `timings` when given (speed/answer_latency.py)."""
        channel = self._channel()
        deadline = time.monotonic() + timeout
        if not self.benchmarks:
            mark(self.folder, "first-benchmark")
        self.benchmarks += 1
        try:  # the worker writes through a FIFO: only redacted lines reach log_path, even if it is killed
            with self.folder.log_channel(log_path, mode="w") as fifo:
                request: dict[str, Any] = {"args": args, "log": str(fifo)}
                if timings is not None:
                    request["timings"] = str(timings)
                self._send(channel, request)
                line = _read_line(channel, deadline, poll)
                if line is None:  # still running at the deadline: stopped, so its FIFO end closes
                    self._discard()
        except BaseException:
            self._discard()
            raise
        if line is None:  # still running at the deadline
            self._discard()
            return None, True
        if not line:  # died mid-scenario: this scenario failed, the next starts a new worker
            self.channel = None
            channel.close()
            with self.folder.open_log(log_path, mode="a") as log:
                log.write(  # shaped like an exception line, so outcome.error_line shows it as the cause
                    f"\nBenchWorkerFailed: the bench worker (process group {channel.pgid}) was killed or crashed "
                    "during this scenario; the next scenario starts a new one\n"
                )
            return channel.returncode(), False
        answer = _json(line) or {}
        code = answer.get("returncode")
        return (int(code) if isinstance(code, int) else 1), False

    def probe(self, request: dict[str, Any], script: Path, log_path: Path, timeout: float) -> list[dict[str, Any]]:
        """token_probe.run_all(request) inside the worker (tokens.py); WorkerUnavailable or
        TimeoutError when it cannot answer (the caller then runs the probe as its own process)."""
        channel = self._channel()
        with self.folder.log_channel(log_path) as fifo:
            self._send(channel, {"probe": request, "script": str(script), "log": str(fifo)})
            line = _read_line(channel, time.monotonic() + timeout, None)
            if line is None:
                self._discard()
        answer = _json(line) if line else None
        if answer is None or not isinstance(answer.get("results"), list):
            self._discard()
            raise TimeoutError(f"the worker gave no token-probe answer within {timeout:g} s")
        return [r for r in answer["results"] if isinstance(r, dict)]

    def _discard(self) -> None:
        channel, self.channel = self.channel, None
        if channel is not None:
            channel.kill()

    def close(self) -> None:
        """End the session: a worker of our own exits; a runbook's shared one waits for the next."""
        channel, self.channel = self.channel, None
        if channel is None:
            return
        try:
            self._close(channel)
        finally:
            log = self.folder.logs / RunFolder.BENCH_WORKER_LOG
            if log.exists():
                self.folder.redact_file(log)  # the worker wrote it after open_log closed

    def _close(self, channel: _Channel) -> None:
        if channel.proc is None:
            channel.close()
            return
        try:
            channel.writer.close()
            channel.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        stop_group(channel.proc, grace_s=0)


def _connect(shared: dict[str, Any], deadline: float) -> _Channel | None:
    """A connection to a runbook's worker, waiting while it is still importing; None if it is gone."""
    path, pgid = str(shared.get("socket")), int(shared.get("pgid") or 0)
    while not os.path.exists(path):
        try:
            os.killpg(pgid, 0)  # still starting
        except OSError:
            return None
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    channel = _Channel(
        sock.makefile("r", encoding="utf-8"), sock.makefile("w", encoding="utf-8"), sock, pgid, sock=sock
    )
    hello = _json(_read_line(channel, deadline, None) or "")
    if not hello or not hello.get("ready"):
        channel.close()
        return None
    log.info("connected to the runbook's bench worker %s", hello.get("pid"))
    channel.hello = hello
    return channel


def _read_line(channel: _Channel, deadline: float, poll: Callable[[], None] | None) -> str | None:
    """The worker's next reply line; "" when it is gone (end of its output, or it exited), None
    past the deadline. (A socket peer killed by a signal stays a zombie until the runbook reaps it,
    so the end of its output, not its pid, says it died.)"""
    with selectors.DefaultSelector() as sel:
        sel.register(channel.waitable, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if sel.select(timeout=min(POLL_S, left)):
                try:
                    return channel.reader.readline()
                except OSError:
                    return ""
            if not channel.alive():
                return ""
            if poll is not None:
                poll()


def _timings(channel: _Channel) -> dict[str, Any]:
    hello = channel.hello or {}
    return {"import_s": hello.get("import_s"), "ready_cpu_s": hello.get("ready_cpu_s")}


def _json(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
