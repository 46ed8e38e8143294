"""Stop a child started in its own session, together with everything it started.

Tools the stages run (the server behind its log pump, bench_serving, sgl-eval, inspect, docker
exec wrappers) spawn workers of their own; killing only the direct child would leave those
behind, out of the notebook's reach. Every such child is started with start_new_session=True,
so its pid is its process group id.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

STOP_GRACE_SECONDS = 10.0


def stop_group(proc: subprocess.Popen[bytes] | subprocess.Popen[str], grace_s: float = STOP_GRACE_SECONDS) -> None:
    """SIGTERM the child's process group, SIGKILL it after `grace_s`; a no-op once it is gone."""
    if proc.poll() is not None:
        return
    kill_group(proc.pid, proc, grace=grace_s)


def group_alive(pgid: int) -> bool:
    """True while a member of the group that is not a zombie exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return has_live_member(pgid)


def has_live_member(pgid: int) -> bool:
    """killpg(0) also succeeds for zombies; look for a member that is not one."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def kill_group(
    pgid: int, process: subprocess.Popen[bytes] | subprocess.Popen[str] | None = None, grace: float = STOP_GRACE_SECONDS
) -> None:
    """SIGTERM the group, wait up to `grace` seconds, then SIGKILL; reaps our own child."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pgid, process)
            if not group_alive(pgid):
                break
            time.sleep(0.05)
        else:
            continue
        break
    _reap(pgid, process)


def _reap(pid: int, process: subprocess.Popen[bytes] | subprocess.Popen[str] | None) -> None:
    if process is not None:
        process.poll()
        return
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def cmdline(pid: int) -> list[str] | None:
    """The process's argv from /proc (None when it is gone or /proc is not available)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


# --------------------------------------------------------------------------- children that die with the run

RUN_TOKEN_ENV = "KIMI_RUNBOOKS_RUN_TOKEN"
"""Set by a runbook for its whole run and inherited by every process it starts (stage kernels,
the server behind its log pump, bench_serving, the accuracy tools): the watchdog and
`teardown_run` find what is left of a run by this token, whatever session it moved to."""

PR_SET_PDEATHSIG = 1


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()
"""Resolved once in the parent: the forked child only calls it (no dlopen after fork)."""


def die_with_parent() -> None:
    """In a child before exec: SIGTERM this process when the thread that started it exits
    (prctl PR_SET_PDEATHSIG); a no-op where prctl is not available."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def start_session(argv: list[str], *, tied_to_parent: bool = True, **popen: Any) -> subprocess.Popen[Any]:
    """Popen in a new session (its pid is its group id). `tied_to_parent`: the child also gets
    SIGTERM when the starting thread dies (a stage kernel killed with its papermill), so a client
    never outlives the stage that started it; only from the main thread, whose end is the
    process's end (a worker thread's exit would stop the child early)."""
    tie = tied_to_parent and _PRCTL is not None and threading.current_thread() is threading.main_thread()
    return subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent if tie else None, **popen)


def start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22): with the pid
    it names one process for good, so a recycled pid is never mistaken for it."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def process_alive(pid: int | None, ticks: int | None = None) -> bool:
    """True while `pid` runs (not a zombie) and, when `ticks` is given, is the same process."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    state = _state(pid)
    if state in (None, "Z", "X"):
        return state is None and not Path("/proc").is_dir()
    return ticks is None or start_ticks(pid) == ticks


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def processes_with_token(token: str, exclude: set[int] | None = None) -> list[int]:
    """Live processes of this user whose environment carries RUN_TOKEN_ENV=token (Linux /proc)."""
    marker = f"{RUN_TOKEN_ENV}={token}".encode()
    skip = (exclude or set()) | _ancestors()
    found = []
    proc = Path("/proc")
    if not token or not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker in environ.split(b"\0") and _state(int(entry.name)) not in (None, "Z", "X"):
            found.append(int(entry.name))
    return sorted(found)


def _ancestors() -> set[int]:
    """This process and its parents: never stopped by a sweep they run themselves."""
    out, pid = set(), os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return out


def stop_processes(pids: list[int], grace: float = STOP_GRACE_SECONDS) -> list[int]:
    """SIGTERM each pid, SIGKILL those still running after `grace`; returns the pids signalled."""
    signalled = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            signalled.append(pid)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(process_alive(p) for p in signalled):
        for pid in signalled:
            _reap(pid, None)
        time.sleep(0.05)
    for pid in signalled:
        if process_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return signalled


# --------------------------------------------------------------------------- threads that end with their block


class BackgroundLoop:
    """A daemon thread running ``body(stopping)`` from start() until stop(): how the progress relay
    and the metrics and telemetry samplers run theirs. The body returns once ``stopping`` is set."""

    def __init__(self, name: str, body: Callable[[threading.Event], None]) -> None:
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=body, args=(self.stopping,), name=name, daemon=True)

    def start(self) -> BackgroundLoop:
        self._thread.start()
        return self

    def stop(self, timeout: float) -> None:
        """Set ``stopping`` and wait up to ``timeout`` seconds for the body to return (none before start())."""
        self.stopping.set()
        if self._thread.ident is not None:
            self._thread.join(timeout=timeout)
