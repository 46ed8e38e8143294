"""The speed stage's start-up, short and measured.

Run alone (`papermill notebooks/speed_bench.ipynb ...` against a running server), the stage used to
spend most of its first ten seconds importing torch, transformers and sglang in the bench worker
(~7 s of CPU on this project's 2-core machine) after the notebook's own imports and cells. The
notebook's first cell now calls shared_worker.prestart, which starts that worker at once (as a
runbook does before its stages), so its imports overlap everything the kernel does until the token
check needs it; `run_scenarios` connects to it like to a runbook's. Inside a runbook, the runbook's
worker is already there and nothing is started.

Each step of the start-up is recorded as a progress event (`mark`): stage "speed", key "startup",
a `phase` from PHASES and its time `t`, in run_dir/progress.jsonl. benchmarks/speed_startup.py reads
them to split the fixed start-up into its phases.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..procs import start_ticks
from ..progress import report_progress
from ..rundir import RunFolder, read_jsonl

PHASES = {
    "kernel-start": "the notebook's kernel started",  # its process start (from /proc; papermill starts it)
    "worker-start": "bench worker starting (importing sglang)",  # by the kernel, the first cell, or a runbook's found
    "token-check": "token check started",  # run_scenarios began it
    "worker-ready": "bench worker ready (sglang imported)",  # the stage's worker answered
    "token-check-done": "token check done",  # the server's counts came back and were judged
    "first-benchmark": "first benchmark sent to bench_serving",  # the first scenario's arguments
}
"""The start-up's marks, in the order a run records them, with the line a runbook relays for each."""

STARTUP_KEY = "startup"


def mark(folder: RunFolder | None, phase: str, at: float | None = None, **fields: Any) -> None:
    """Record one start-up phase (a no-op without a run folder)."""
    if phase not in PHASES:
        raise ValueError(f"unknown start-up phase {phase!r}. Fix: one of {', '.join(PHASES)}")
    report_progress(
        folder,
        "speed",
        f"start-up: {PHASES[phase]}",
        key=STARTUP_KEY,
        phase=phase,
        t=time.time() if at is None else at,
        **fields,
    )


def marks(folder: RunFolder) -> list[tuple[str, float]]:
    """The start-up marks of a run folder as recorded: (phase, time), in file order; a phase
    recorded twice (a stage rerun in the same folder) keeps each occurrence."""
    rows = read_jsonl(folder.file(RunFolder.PROGRESS))
    return [
        (str(r["phase"]), float(r["t"]))
        for r in rows
        if r.get("stage") == "speed" and r.get("key") == STARTUP_KEY and r.get("phase") in PHASES
    ]


def process_start_time(pid: int | None = None) -> float | None:
    """When a process started (Unix time, 10 ms resolution; Linux /proc), else None."""
    ticks = start_ticks(pid or os.getpid())
    if ticks is None:
        return None
    try:
        with open("/proc/stat") as fh:
            boot = next(float(line.split()[1]) for line in fh if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None
    return boot + ticks / os.sysconf("SC_CLK_TCK")
