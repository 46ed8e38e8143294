"""The run's watchdog: tears the run down when the runbook process disappears without doing so.

A runbook's own `finally`, atexit hook and SIGTERM handler cover a clean exit and a polite kill.
They do not cover SIGKILL, the OOM killer, or the usual way a notebook dies: papermill gets
SIGTERM (CI, `timeout`), and the kernel running the runbook ends with os._exit when ipykernel's
parent poller sees papermill gone, so no Python-level handler runs. The server (its own session,
by design, so that it outlives the deploy stage) and the bench client would stay up; on hardware
that is 8 GPUs held.

So `Watchdog.start` launches `python -m kimi_runbooks.deploy.watchdog` in a session of its own,
holding one end of a socket pair whose other end only the runbook process holds. The runbook
sends "R" (release) once it has torn down. When the socket closes without it, the runbook is gone
however it died (the kernel closes its sockets on any exit), and the watchdog runs `teardown_run`:
the server's process group, container or Slurm job from process.json and the registry, then every
process still carrying the run's token (stage kernels, bench_serving, tool runs). It records the
teardown and the interrupted stage in stages.jsonl. It also holds the run folder's lock, so no new
run starts in the folder before the old one is gone.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

from ..procs import RUN_TOKEN_ENV
from ..rundir import RunFolder, now_iso, read_jsonl
from .teardown import teardown_run

MODULE = "kimi_runbooks.deploy.watchdog"
RELEASE = b"R"
SETTLE_SECONDS = 1.5
"""After the runbook is gone: its stage kernels notice within about a second (ipykernel's parent
poller) and end; a second sweep after this catches whatever they started meanwhile."""
GRACE_SECONDS = 2.0
"""SIGTERM, then SIGKILL after this: the runbook is gone, nothing waits for a graceful shutdown,
and nothing of a killed run may run 10 s after the kill (a server or bench client that ignores
SIGTERM took the launchers' 10 s plus the sweep's 5 s)."""


class Watchdog:
    """The runbook's side: start it, and release it after a clean teardown."""

    def __init__(self, process: subprocess.Popen[bytes], sock: socket.socket, folder: RunFolder | None = None) -> None:
        self.process = process
        self.folder = folder
        self._sock = sock

    @classmethod
    def start(cls, folder: RunFolder, token: str, *, keep_fds: Sequence[int] = ()) -> Watchdog:
        """Start the watchdog for `folder` (it inherits `keep_fds`, e.g. the folder's lock)."""
        ours, theirs = socket.socketpair()
        env = {k: v for k, v in os.environ.items() if k != RUN_TOKEN_ENV}  # the sweep must not find it
        argv = [sys.executable, "-m", MODULE, "--run-dir", str(folder.path), "--owner", str(os.getpid())]
        argv += ["--token", token]
        process = subprocess.Popen(
            argv,
            stdin=theirs.fileno(),
            stdout=subprocess.DEVNULL,  # it writes its own log, redacted line by line (main)
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a signal to the runbook's process group must not reach it
            pass_fds=tuple(keep_fds),
        )
        theirs.close()
        return cls(process, ours, folder)

    def release(self, timeout: float = 10.0) -> None:
        """The runbook tore down itself: tell the watchdog to exit without acting."""
        try:
            self._sock.sendall(RELEASE)
        except OSError:
            pass
        self._sock.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    @property
    def pid(self) -> int:
        return self.process.pid


def wait_for_owner(fd: int = 0) -> bytes:
    """Block until the runbook releases (RELEASE) or disappears (EOF: b"")."""
    while True:
        try:
            data = os.read(fd, 1)
        except InterruptedError:
            continue
        except OSError:
            return b""
        return data


def interrupted_stages(folder: RunFolder) -> list[str]:
    """Stages whose latest row in stages.jsonl says they were still running."""
    latest: dict[str, str] = {}
    for row in read_jsonl(folder.stages):
        if row.get("stage"):
            latest[str(row["stage"])] = str(row.get("status"))
    return [name for name, status in latest.items() if status == "running"]


def act(folder: RunFolder, owner: int, token: str) -> list[str]:
    """The runbook is gone: stop everything of the run and record it."""
    print(f"[watchdog {now_iso()}] runbook process {owner} is gone without a teardown; stopping the run", flush=True)
    done = teardown_run(folder, tokens=[token], grace=GRACE_SECONDS)
    time.sleep(SETTLE_SECONDS)
    done += [d for d in teardown_run(folder, tokens=[token], grace=GRACE_SECONDS) if d not in done]
    why = f"interrupted: the runbook process {owner} ended during this stage (killed?)"
    for name in interrupted_stages(folder):
        folder.append_jsonl(folder.stages, {"stage": name, "status": "interrupted", "detail": why})
    folder.append_jsonl(
        folder.stages,
        {
            "stage": "teardown",
            "status": "ok",
            "detail": f"by the watchdog after runbook process {owner} ended: " + ("; ".join(done) or "nothing to stop"),
            "finished_at": now_iso(),
        },
    )
    print(f"[watchdog {now_iso()}] done: {'; '.join(done) or 'nothing to stop'}", flush=True)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--owner", type=int, required=True)
    parser.add_argument("--token", required=True)
    args = parser.parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # a terminal's Ctrl-C is for the runbook, not for us
    folder = RunFolder(args.run_dir)
    # it outlives the runbook, so nothing can redact its log after it: every line is redacted before
    # it is written (a SIGKILL mid-line loses that line, never leaks it); a child's own output is dropped
    with folder.redacting_writer(folder.logs / RunFolder.WATCHDOG_LOG) as log:
        sys.stdout = sys.stderr = log
        try:
            if wait_for_owner() != RELEASE:
                act(folder, args.owner, args.token)
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return 0


if __name__ == "__main__":
    sys.exit(main())
