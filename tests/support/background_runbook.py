"""A runbook in a process of its own, for the tests that kill it or race it: h200 on the emulator at
time scale 1 with a slow invoke stage, so a test can act while a later stage is under way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kimi_runbooks import deploy
from kimi_runbooks.rundir import RunFolder, read_jsonl

SCRIPT = """
import json, sys
from kimi_runbooks import runbook
runbook.run_runbook({"platform": "h200", "stages": json.loads(sys.argv[2]), "run_dir": sys.argv[1],
                     "time_scale": 1.0, "fail_on_error": False,
                     "stage_overrides": {"invoke": {"timeout": 600, "max_tokens_thinking": 100000}}})
"""


def _deployed(folder: Path) -> bool:
    return any(
        r.get("stage") == "deploy" and r.get("status") != "running" for r in read_jsonl(folder / RunFolder.STAGES)
    )


@contextmanager
def runbook_in_background(
    folder: Path, stages: Sequence[str], within_s: float = 180
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """Start the runbook (its own session), wait until its deploy stage has ended and yield (process,
    the server's process group); afterwards the runbook is stopped if still running and the folder torn down."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(folder), json.dumps(list(stages))],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + within_s
        while not _deployed(folder):
            assert proc.poll() is None, "the runbook ended before its deploy stage finished"
            assert time.monotonic() < deadline, "deploy stage did not finish"
            time.sleep(0.5)
        yield proc, json.loads((folder / RunFolder.PROCESS).read_text())["pgid"]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        deploy.teardown_run(RunFolder(folder))
