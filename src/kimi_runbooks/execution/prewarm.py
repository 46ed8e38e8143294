"""The speed notebook's kernel starts the bench worker before anything else.

Importing torch, transformers and sglang's bench_serving takes ~7 s of CPU: on the speed stage's
critical path when the stage runs alone. The speed notebook names its own kernelspec (SPEED_KERNEL,
the project's kernel with PREWARM_ENV set), and that kernel, before it even imports ipykernel,
starts tools/scripts/bench_worker.py listening on a Unix socket, so the import runs while the
kernel starts and the notebook's first cells run. The worker's description (socket, pid, python,
offline) goes into this process's environment (WORKER_ENV): speed.shared_worker.prestart, in the
notebook's first cell, hands it to the stage through the run folder as a runbook's worker is
handed. It is started offline (the notebook's default); a stage run with offline=False starts its
own as before.

Nothing is started inside a runbook (its kernels carry procs.RUN_TOKEN_ENV: the runbook started
its worker before its stages) or without a bench env. The worker dies with the kernel: SIGTERM
when the kernel's main thread ends (procs.start_session), and the worker itself exits once its
parent is gone.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import tempfile
import time

from ..procs import RUN_TOKEN_ENV, start_session, stop_group
from ..tools.envs import OFFLINE_ENV, ToolEnvError, tool_env
from ..tools.scripts import script

SPEED_KERNEL = "kimi-runbooks-speed"
"""The kernelspec notebooks/speed_bench.ipynb names (installed with the python3 one)."""
PREWARM_ENV = "KIMI_RUNBOOKS_PREWARM"
PREWARM_BENCH = "bench-worker"
WORKER_ENV = "KIMI_RUNBOOKS_KERNEL_BENCH_WORKER"
"""Set by the kernel for its notebook: the prewarmed worker's description, as JSON."""


def start_if_asked() -> dict[str, object] | None:
    """Start the bench worker when this kernel's spec asks for it (see module doc); its description."""
    if os.environ.get(PREWARM_ENV) != PREWARM_BENCH or os.environ.get(RUN_TOKEN_ENV):
        return None
    try:
        env = tool_env("bench")
    except ToolEnvError:
        return None
    sock = os.path.join(tempfile.gettempdir(), f"kimi-runbooks-bench-kernel-{os.getpid()}.sock")
    fd, log = tempfile.mkstemp(prefix=f"kimi-runbooks-bench-kernel-{os.getpid()}-", suffix=".log")
    environ = {k: v for k, v in os.environ.items() if k not in (PREWARM_ENV, WORKER_ENV)}
    try:
        proc = start_session(
            [str(env.python), str(script("bench_worker.py")), "--listen", sock],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=fd,
            env={**environ, "PYTHONUNBUFFERED": "1", **OFFLINE_ENV},
        )
    except OSError:
        os.close(fd)
        os.unlink(log)
        return None
    os.close(fd)
    described: dict[str, object] = {
        "socket": sock,
        "pid": proc.pid,
        "pgid": proc.pid,
        "python": str(env.python),
        "offline": True,
        "log": log,
        "started_by": "kernel",
        "started_at": time.time(),
    }
    os.environ[WORKER_ENV] = json.dumps(described)

    def stop() -> None:
        stop_group(proc, grace_s=0)
        for path in (sock, log):
            try:
                os.unlink(path)
            except OSError:
                pass

    atexit.register(stop)
    return described
