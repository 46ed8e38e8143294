"""papermill executes notebooks/deploy.ipynb with the emulator launcher into a temporary run folder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from kimi_runbooks import deploy
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import PlanConfig, plan, save_plan
from kimi_runbooks.rundir import RunFolder
from tests.support import run_notebook

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

NOTEBOOK = REPO_ROOT / "notebooks" / "deploy.ipynb"


def test_source_notebook_is_clean() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    for cell in code:
        assert not cell.get("outputs") and cell.get("execution_count") is None
        if cell is not code[0]:  # the parameters cell is a list of knobs, not logic
            assert len(cell.source.splitlines()) <= 15, "logic belongs in the package"


def test_papermill_deploy_with_emulator(tmp_path: Path) -> None:
    run = tmp_path / "run"
    out = tmp_path / "deploy.out.ipynb"
    run_notebook(
        str(NOTEBOOK),
        str(out),
        kernel_name="python3",
        parameters={
            "platform": "mi350x",
            "launcher": "emulator",
            "run_dir": str(run),
            "time_scale": 0.02,
            "startup_timeout": 60,
            "keep_running": False,
        },
    )
    handle = json.loads((run / "handle.json").read_text())
    assert handle["emulated"] is True and handle["platform"] == "mi350x"
    assert handle["max_total_num_tokens"] > 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["server_args"]["tp_size"] == 4 and manifest["emulated"] is True
    text = out.read_text()
    assert "EMULATED server" in text and "ready at" in text and "server stopped" in text
    pgid = handle["pgid"]
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)
    assert deploy.teardown_run(RunFolder.of(run)) == []


def test_papermill_refuses_an_invalid_plan(tmp_path: Path) -> None:
    with pytest.raises(pm.PapermillExecutionError) as err:
        run_notebook(
            str(NOTEBOOK),
            str(tmp_path / "o.ipynb"),
            kernel_name="python3",
            parameters={"platform": "mi350x", "tp": 8, "run_dir": str(tmp_path / "run")},
        )
    assert "PlanError" in str(err.value) and "nothing was started" in str(err.value)
    assert not (tmp_path / "run").exists()


def test_papermill_deploy_launches_the_plan_saved_in_the_run_folder(tmp_path: Path) -> None:
    """As from a runbook: only run_dir and the deploy options are passed. The saved plan's argv was
    edited after planning (4322, its config says 4321), so re-planning would launch another server."""
    run = tmp_path / "run"
    folder = RunFolder.create(run)
    save_plan(folder, plan(PlanConfig(platform="mi350x", context_length=4321)))
    record = folder.read_json(folder.plan)
    argv = record["saved"]["plan"]["argv"]
    argv[argv.index("--context-length") + 1] = "4322"
    folder.save_json(folder.plan, record)
    run_notebook(
        str(NOTEBOOK),
        str(tmp_path / "deploy.out.ipynb"),
        kernel_name="python3",
        parameters={"run_dir": str(run), "time_scale": 0.02, "startup_timeout": 60},
    )
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["platform"] == "mi350x" and manifest["server_args"]["tp_size"] == 4
    assert manifest["server_args"]["context_length"] == 4322
