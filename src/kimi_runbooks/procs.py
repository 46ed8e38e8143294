"""Stop a child started in its own session, together with everything it started.

Tools the stages run (bench_serving, sgl-eval, inspect, docker exec wrappers) spawn workers of
their own; killing only the direct child would leave those behind, out of the notebook's reach.
"""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(proc: subprocess.Popen, grace_s: float = 10.0) -> None:
    """SIGTERM the child's process group, SIGKILL it after `grace_s`; a no-op once it is gone."""
    if proc.poll() is not None:
        return
    _signal_group(proc, signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(proc, signal.SIGKILL)
        proc.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session=True made the child its group leader
    except ProcessLookupError:
        pass
