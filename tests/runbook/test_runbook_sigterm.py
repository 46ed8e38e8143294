"""A runbook killed with SIGTERM mid-run still tears down the server its deploy stage left up."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kimi_runbooks import deploy
from kimi_runbooks.procs import group_alive
from kimi_runbooks.rundir import RunFolder, read_jsonl

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

SCRIPT = """
import sys
from kimi_runbooks import runbook
runbook.run_runbook({"platform": "h200", "stages": ["deploy", "invoke", "report"],
                     "run_dir": sys.argv[1], "time_scale": 1.0, "fail_on_error": False,
                     "stage_overrides": {"invoke": {"timeout": 600, "max_tokens_thinking": 100000}}})
"""


def _deploy_done(folder: Path) -> bool:
    return any(r.get("stage") == "deploy" and r.get("status") != "running" for r in read_jsonl(folder / "stages.jsonl"))


def test_sigterm_during_a_stage_tears_the_server_down(tmp_path):
    folder = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, str(folder)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 180
        while not _deploy_done(folder):
            assert proc.poll() is None, "runbook exited before the deploy stage finished"
            assert time.monotonic() < deadline, "deploy stage did not finish"
            time.sleep(0.5)
        pgid = json.loads((folder / RunFolder.PROCESS).read_text())["pgid"]
        assert group_alive(pgid)  # left running for the invoke stage
        time.sleep(2)  # the invoke stage is under way
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not group_alive(pgid), "server outlived the killed runbook"
        assert '"stage": "teardown"' in (folder / "stages.jsonl").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        deploy.teardown_run(folder)
