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
    assert deploy.teardown_run(run) == []


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
