"""Issue 13 case 5: a run folder resumes only the configuration that made it, and one run at a time.

A folder copied from an H200 run and reused for B200 is refused (its H200 rows would be reported
as the B200 run), unless force=True sets the earlier results aside; two runbooks on one run_dir
cannot both run (they would stop each other's servers)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kimi_runbooks import runbook
from kimi_runbooks.procs import group_alive
from kimi_runbooks.rundir import RunFolder, RunFolderBusy
from tests.support.background_runbook import runbook_in_background

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

DEPLOY_ONLY = {"platform": "h200", "stages": ["deploy"], "time_scale": 0.05, "fail_on_error": False}


@pytest.fixture(scope="module")
def h200_run(tmp_path_factory) -> Path:
    run = tmp_path_factory.mktemp("guard") / "h200"
    runbook.run_runbook({**DEPLOY_ONLY, "run_dir": str(run)})
    return run


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_copied_folder_reused_for_another_platform_is_refused(h200_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(h200_run, copy)
    before = _snapshot(copy)
    with pytest.raises(runbook.PlanInvalid) as err:
        runbook.run_runbook({**DEPLOY_ONLY, "platform": "b200", "model": "kimi-k2-instruct", "run_dir": str(copy)})
    text = str(err.value)
    assert "another configuration" in text and "platform 'h200' -> 'b200'" in text
    assert "new run_dir" in text and "force=True" in text
    after = _snapshot(copy)
    assert {k: v for k, v in after.items() if not k.startswith(".lock")} == {
        k: v for k, v in before.items() if not k.startswith(".lock")
    }


def test_force_sets_the_earlier_results_aside(h200_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(h200_run, copy)
    runbook.run_runbook({**DEPLOY_ONLY, "platform": "b200", "run_dir": str(copy), "force": True})
    aside = list((copy / "superseded").iterdir())
    assert len(aside) == 1 and (aside[0] / RunFolder.HANDLE).exists()
    assert json.loads((aside[0] / RunFolder.FINGERPRINT).read_text())["platform"] == "h200"
    assert json.loads((copy / RunFolder.FINGERPRINT).read_text())["platform"] == "b200"
    assert json.loads((copy / RunFolder.HANDLE).read_text())["platform"] == "b200"


def test_a_folder_with_results_and_no_fingerprint_is_refused(h200_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(h200_run, copy)
    (copy / RunFolder.FINGERPRINT).unlink()
    with pytest.raises(runbook.PlanInvalid, match="no fingerprint"):
        runbook.run_runbook({**DEPLOY_ONLY, "run_dir": str(copy)})


def test_the_same_configuration_resumes(h200_run, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(h200_run, copy)
    result = runbook.run_runbook({**DEPLOY_ONLY, "run_dir": str(copy)})
    assert result.stages["deploy"].status == "ok"
    assert not (copy / "superseded").exists()


def test_two_runbooks_cannot_share_a_run_folder(tmp_path):
    folder = tmp_path / "run"
    with runbook_in_background(folder, ["deploy", "invoke"]) as (first, pgid):
        with pytest.raises(RunFolderBusy, match=rf"in use by another run \(pid {first.pid}"):
            runbook.run_runbook({**DEPLOY_ONLY, "run_dir": str(folder)})
        assert group_alive(pgid), "the refused run stopped the first run's server"
        assert first.poll() is None
