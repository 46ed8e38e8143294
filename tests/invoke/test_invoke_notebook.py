"""notebooks/invoke.ipynb runs headlessly against the emulator and writes invoke.json."""

from __future__ import annotations

import json

import nbformat
import papermill as pm
import pytest

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.invoke import AGENTIC_CASES
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle, write_handle
from tests.support import clean_code_cells, run_notebook

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

ROOT = REPO_ROOT
NOTEBOOK = ROOT / "notebooks" / "invoke.ipynb"
MODEL = "moonshotai/Kimi-K2.6"


def _outputs(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.extend(str(v) for v in out.get("data", {}).values())
            parts.append(" ".join(out.get("traceback", [])))
    return "\n".join(parts)


def test_source_notebook_is_committed_clean_with_a_parameters_cell():
    clean_code_cells(NOTEBOOK, first_checked=1)  # the parameters cell is written from InvokeOptions


def test_notebook_runs_against_the_emulator_from_the_run_folder(tmp_path, monkeypatch):
    key = "zq-notebook-key-5150"
    monkeypatch.setenv("INVOKE_NB_AUTH", key)  # inherited by the papermill kernel
    run = tmp_path / "run"
    run.mkdir()
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, api_key=key))
    try:
        write_handle(
            RunFolder.of(run, create=True),
            RunHandle(base_url=url, model=MODEL, launcher="emulator", emulated=True, api_key_env="INVOKE_NB_AUTH"),
        )
        run_notebook(
            str(NOTEBOOK),
            str(run / "invoke.ipynb"),
            parameters={"run_dir": str(run)},
            cwd=str(tmp_path),
            progress_bar=False,
        )
    finally:
        stop()
    doc = json.loads((run / "invoke.json").read_text())
    assert doc["emulated"] is True and doc["counts"]["fail"] == 0 and doc["counts"]["pass"] >= 10
    assert {r["name"] for r in doc["results"] if r["status"] == "skip"} == {"image_content", "image_url"}
    text = _outputs(nbformat.read(run / "invoke.ipynb", as_version=4))
    assert "0 failed" in text and "EMULATED" in text and "wrote" in text
    n = len(AGENTIC_CASES)
    assert f"agentic: {n} of {n} cases passed (emulated)" in text and "multi_turn_stream" in text
    assert {r["suite"] for r in doc["results"]} == {"feature", "agentic"}
    assert key not in text and key not in (run / "invoke.json").read_text()


def test_fail_on_error_fails_the_notebook_after_saving(tmp_path):
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, fault="no-reasoning"))
    run = tmp_path / "run"
    try:
        with pytest.raises(pm.PapermillExecutionError, match="ChecksFailed"):
            run_notebook(
                str(NOTEBOOK),
                str(tmp_path / "out.ipynb"),
                parameters={
                    "run_dir": str(run),
                    "base_url": url,
                    "model": MODEL,
                    "checks": ["chat", "thinking"],
                    "fail_on_error": True,
                },
            )
    finally:
        stop()
    doc = json.loads((run / "invoke.json").read_text())
    assert {r["name"]: r["status"] for r in doc["results"]} == {"chat": "pass", "thinking": "fail"}
