"""A runbook's bench worker: started before the first stage, so that importing torch and sglang
(about 7 s on 2 cores, CPU-bound) overlaps the deploy and invoke stages instead of opening the
speed stage.

The runbook starts bench_worker.py with `--listen SOCKET` and records where it listens in
run_dir/bench-worker.json; the speed stage's BenchWorker connects to it when its python and
offline mode are the stage's, and falls back to a worker of its own otherwise. The worker
inherits the run's token (the watchdog's sweep stops it if the runbook dies) and is stopped when
the stages end. The socket lives in the system temp folder: a run folder's path can exceed the
108 bytes a Unix socket path may have.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..procs import start_session, stop_group
from ..rundir import RunFolder
from ..tools.envs import OFFLINE_ENV, ToolEnvError, tool_env
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
