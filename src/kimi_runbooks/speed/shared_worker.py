"""A runbook's bench worker: started before the first stage, so that importing torch and sglang
(about 7 s on 2 cores, CPU-bound) overlaps the deploy and invoke stages instead of opening the
speed stage.

The runbook starts bench_worker.py with `--listen SOCKET` and records where it listens in
run_dir/bench-worker.json; the speed stage's BenchWorker connects to it when its python and
offline mode are the stage's, and falls back to a worker of its own otherwise. The worker
inherits the run's token (the watchdog's sweep stops it if the runbook dies) and is stopped when
the stages end. The socket lives in the system temp folder: a run folder's path can exceed the
108 bytes a Unix socket path may have.

A speed notebook run alone starts one the same way in its first cell (`prestart`): the imports then
overlap the notebook's own cells, and the worker stops when the kernel exits (speed/start_phases.py).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..execution.prewarm import WORKER_ENV
from ..procs import start_session, stop_group
from ..rundir import RunFolder
from ..tools.envs import OFFLINE_ENV, ToolEnvError, tool_env
from .benchenv import default_bench_python
from .start_phases import mark, process_start_time
from .worker import WORKER_SCRIPT

SHARED_FILE = RunFolder.BENCH_WORKER


@dataclass
class SharedWorker:
    proc: subprocess.Popen[bytes]
    description: dict[str, Any]
    folder: RunFolder

    def stop(self) -> None:
        stop_group(self.proc, grace_s=0)
        Path(str(self.description["socket"])).unlink(missing_ok=True)
        self.folder.file(SHARED_FILE).unlink(missing_ok=True)


def start(folder: RunFolder, offline: bool = True) -> SharedWorker | None:
    """Start the worker for this run (None without a bench env: the stage then manages alone)."""
    try:
        env = tool_env("bench")
    except ToolEnvError:
        return None
    digest = hashlib.sha256(str(folder.path).encode()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"kimi-runbooks-bench-{digest}-{os.getpid()}.sock")
    environ = {**os.environ, "PYTHONUNBUFFERED": "1", **(OFFLINE_ENV if offline else {})}
    folder.mkdir(folder.logs)
    with folder.open_log(folder.logs / RunFolder.BENCH_WORKER_LOG, "a", drain_s=0) as err:  # pumped while it runs
        proc = start_session(
            [str(env.python), str(WORKER_SCRIPT), "--listen", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=environ,
        )
    description = {"socket": path, "pid": proc.pid, "pgid": proc.pid, "python": str(env.python), "offline": offline}
    folder.save_json(folder.file(SHARED_FILE), description)
    return SharedWorker(proc, description, folder)


def find(folder: RunFolder, python: str, offline: bool) -> dict[str, Any] | None:
    """The runbook's worker for a stage with this python and offline mode, if one is running."""
    path = folder.file(SHARED_FILE)
    if not path.exists():
        return None
    try:
        found = json.loads(path.read_text())
        os.killpg(int(found["pgid"]), 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same_python = os.path.realpath(str(found.get("python"))) == os.path.realpath(python)
    return found if same_python and bool(found.get("offline")) == bool(offline) else None


_STARTED: dict[str, SharedWorker] = {}
"""Workers this process started early, by run folder; each stops when the process exits."""


def prestart(
    folder: RunFolder,
    *,
    offline: bool = True,
    command_prefix: Sequence[str] | None = None,
    bench_python: str | None = None,
) -> str:
    """Start the speed stage's bench worker now, for `run_scenarios` to connect to (start_phases.py).
    Nothing is started when bench_serving will not run in the bench env's python (a command prefix
    or another interpreter: the runbook's rule), when a worker for this folder already runs (a
    runbook's, or one started before in this kernel), or without a bench env. Returns what was
    done, for the notebook to print. A worker started here stops when this process exits."""
    kernel = process_start_time()
    if kernel is not None:
        mark(folder, "kernel-start", at=kernel)
    if command_prefix or bench_python:
        _kernel_worker(None, offline)  # the kernel's, if any, is of no use: stopped
        return "bench worker: not started early (bench_serving runs through command_prefix / bench_python)"
    python = default_bench_python()
    found = find(folder, python, offline)
    if found is not None:
        mark(folder, "worker-start", shared=True, pid=found.get("pid"))
        return f"bench worker: using the one already running (pid {found.get('pid')})"
    kernels = _kernel_worker(python, offline)
    if kernels is not None:  # the speed kernelspec's, importing since the kernel started
        path = folder.file(SHARED_FILE)
        folder.save_json(path, kernels)
        atexit.register(path.unlink, missing_ok=True)  # the kernel stops the worker itself
        mark(folder, "worker-start", at=kernels.get("started_at"), shared=True, pid=kernels.get("pid"), by="kernel")
        return f"bench worker: started with the kernel (pid {kernels.get('pid')}), importing sglang"
    started = start(folder, offline=offline)
    if started is None:
        return "bench worker: not started early (no bench tool env)"
    _STARTED[str(folder.path)] = started
    atexit.register(started.stop)
    mark(folder, "worker-start", shared=False, pid=started.proc.pid)
    return f"bench worker: importing sglang in the background (pid {started.proc.pid})"


def _kernel_worker(python: str | None, offline: bool) -> dict[str, Any] | None:
    """The worker this kernel started (execution/prewarm.py), when it is alive and fits the stage's
    python and offline mode; one that does not fit (or any, with python None) is stopped: its
    imports would only take CPU from the stage."""
    try:
        described = json.loads(os.environ.get(WORKER_ENV) or "null")
        pgid = int(described["pgid"])
        os.killpg(pgid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    fits = python is not None and os.path.realpath(str(described.get("python"))) == os.path.realpath(python)
    if fits and bool(described.get("offline")) == bool(offline):
        return dict(described)
    try:
        os.killpg(pgid, signal.SIGTERM)
    except OSError:
        pass
    return None
