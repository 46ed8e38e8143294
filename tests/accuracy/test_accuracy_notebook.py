"""notebooks/accuracy.ipynb: committed clean, and executed by papermill against the emulator."""

from __future__ import annotations

import json
import re

import nbformat
import pytest

from kimi_runbooks.accuracy import read_rows
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.rundir import RunFolder
from tests.support import clean_code_cells, run_notebook

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

ROOT = REPO_ROOT
NOTEBOOK = ROOT / "notebooks" / "accuracy.ipynb"


def test_source_notebook_is_clean_and_parameterized():
    code = clean_code_cells(NOTEBOOK, first_checked=1)  # the parameters cell is written from AccuracyOptions
    for name in ("run_dir", "base_url", "model", "suites", "limits", "k2vv_path", "kvv_path", "datasets", "published"):
        assert re.search(rf"^{name}\s*(:[^=\n]*)?=", code[0].source, re.M), f"no parameter {name}"


@pytest.mark.heavy
def test_notebook_runs_against_the_emulator(tmp_path, monkeypatch, require_tool_env):
    require_tool_env("sgl-eval")  # the default smoke set runs aime25 with sgl-eval
    key = "zq-acc-notebook-key-7261"
    monkeypatch.setenv("ACC_NB_AUTH", key)
    run = tmp_path / "run"
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, api_key=key))
    try:
        run_notebook(
            str(NOTEBOOK),
            str(tmp_path / "accuracy.ipynb"),
            parameters={
                "run_dir": str(run),
                "base_url": url,
                "api_key_env": "ACC_NB_AUTH",
                "suites": ["toolcall-builtin", "aime25", "ocrbench"],
                "kvv_path": str(tmp_path / "missing-kvv"),
            },
        )
    finally:
        stop()
    rows = read_rows(RunFolder(run))
    ok = {r.suite for r in rows if r.status == "ok"}
    assert ok == {"toolcall-builtin", "aime25"}
    assert all(r.emulated and r.source == "emulated" for r in rows)
    skipped = [r for r in rows if r.status == "skipped"]
    assert [r.suite for r in skipped] == ["ocrbench"] and "git clone" in skipped[0].detail
    aime = {r.metric: r for r in rows if r.suite == "aime25"}
    assert aime["pass_at_1_avg1"].n == 2 and aime["pass_at_1_avg1"].tool_version.startswith("sgl-eval ")
    out = nbformat.read(tmp_path / "accuracy.ipynb", as_version=4)
    text = json.dumps([c.get("outputs", []) for c in out.cells])
    assert "EMULATED" in text and "pass_at_1_avg32" in text  # joined to the published metric
    assert key not in text and key not in (run / "accuracy.jsonl").read_text()
