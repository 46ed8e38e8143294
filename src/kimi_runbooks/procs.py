"""Stop a child started in its own session, together with everything it started.

Tools the stages run (the server behind its log pump, bench_serving, sgl-eval, inspect, docker
exec wrappers) spawn workers of their own; killing only the direct child would leave those
behind, out of the notebook's reach. Every such child is started with start_new_session=True,
so its pid is its process group id.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

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
