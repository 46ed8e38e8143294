"""launcher='slurm' runs the emulator through sbatch + srun on a real (single-node) Slurm cluster.

CI starts one with scripts/start_slurm.sh; elsewhere the test skips when `sinfo` does not answer.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from kimi_runbooks import deploy
from kimi_runbooks.deploy import sbatch as slurm
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.rundir import RunFolder
from tests.support import missing


def _slurm_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
    return proc.returncode == 0 and any(s.startswith(("idle", "mix", "alloc")) for s in proc.stdout.split())


@pytest.fixture
def slurm_cluster() -> None:
    if not _slurm_up():
        missing("a running Slurm (sinfo)", "bash scripts/start_slurm.sh (as root; .ci/run does it)")


@pytest.mark.heavy
def test_emulator_through_srun_ready_and_cancelled(
    slurm_cluster: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-slurm-" + os.urandom(6).hex()
    monkeypatch.setenv("KIMI_SLURM_TEST_KEY", key)
    run = tmp_path / "run"
    plan = make_plan({"platform": "h200", "api_key_env": "KIMI_SLURM_TEST_KEY"})
    with deploy.launch(
        plan,
        "slurm",
        RunFolder.of(run, create=True),
        startup_timeout=120,
        progress=False,
        options={"emulate": True, "time_scale": 0.02, "startup_seconds": 10},
    ) as handle:
        job = handle.slurm_job_id
        assert job and slurm.job_state(job) == "RUNNING"
        assert httpx.get(handle.base_url + "/health", timeout=5).status_code == 200
        assert handle.server_info["emulated"] is True
    assert not slurm.is_active(job), "scancel did not end the job"
    script = (run / "server.sbatch").read_text()
    assert "srun " in script and "kimi_runbooks.emulator" in script
    assert json.loads((run / "handle.json").read_text())["slurm_job_id"] == job
    assert "Load weight begin" in (run / "server.log").read_text()
    for path in run.rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), f"key leaked into {path}"


@pytest.mark.heavy
def test_teardown_run_cancels_a_kept_job(slurm_cluster: None, tmp_path: Path) -> None:
    run = tmp_path / "run"
    handle = deploy.launch(
        make_plan({"platform": "h200"}),
        "slurm",
        RunFolder.of(run, create=True),
        startup_timeout=120,
        progress=False,
        options={"emulate": True, "time_scale": 0.02},
    )
    handle.detach()
    assert slurm.is_active(handle.slurm_job_id)
    assert deploy.teardown_run(RunFolder.of(run)) == [f"scancel {handle.slurm_job_id}"]
    assert not slurm.is_active(handle.slurm_job_id)
    assert deploy.teardown_run(RunFolder.of(run)) == []
