"""Issue 29 item 8: stepping through a notebook leaves the checkout clean."""

from __future__ import annotations

import subprocess
import sys

import nbformat

from kimi_runbooks.paths import OUTPUTS_DIR, REPO_ROOT
from kimi_runbooks.rundir import outputs_base

STRIP = REPO_ROOT / "scripts" / "strip_notebook_outputs.py"


def test_run_folders_default_to_the_checkouts_outputs_whatever_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("KIMI_RUNBOOKS_OUTPUTS", raising=False)
    monkeypatch.chdir(REPO_ROOT / "runbooks")  # where JupyterLab runs a runbook's kernel
    assert outputs_base() == OUTPUTS_DIR == REPO_ROOT / "outputs"
    monkeypatch.setenv("KIMI_RUNBOOKS_OUTPUTS", str(tmp_path))
    assert outputs_base() == tmp_path


def _strip(text: str) -> str:
    return subprocess.run(
        [sys.executable, str(STRIP)], input=text, capture_output=True, text=True, check=True, timeout=60
    ).stdout


def test_the_output_filter_turns_an_executed_runbook_back_into_the_generated_one():
    committed = (REPO_ROOT / "runbooks" / "h200.ipynb").read_text()
    nb = nbformat.reads(committed, as_version=4)
    for n, cell in enumerate(nb.cells):
        cell.metadata["execution"] = {"iopub.status.busy": "2026-12-03T06:00:00Z"}
        if cell.cell_type == "code":
            cell.execution_count = n
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    nb.metadata["papermill"] = {"duration": 1.0}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    executed = nbformat.writes(nb)
    assert executed != committed
    assert _strip(executed) == committed
    assert _strip("not a notebook") == "not a notebook"


def test_git_applies_the_filter_to_the_generated_notebooks():
    out = subprocess.run(
        ["git", "check-attr", "filter", "runbooks/h200.ipynb", "notebooks/deploy.ipynb", "tests/nbval/x.ipynb"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    if out.returncode != 0:  # a source tarball without .git: nothing to keep clean
        return
    lines = out.stdout.splitlines()
    assert lines[0].endswith("filter: notebook-outputs") and lines[1].endswith("filter: notebook-outputs")
    assert lines[2].endswith("filter: unspecified")  # nbval notebooks keep the outputs they check


def test_the_filter_passes_a_generated_notebook_through_without_nbformat():
    """git runs the filter on every notebook of a fresh clone's first `git status` (the deploy
    manifest's dirty check); an already clean notebook must not pay nbformat's import for it."""
    no_nbformat = (
        "import runpy, sys; sys.modules['nbformat'] = None; sys.argv = [sys.argv[1]]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    for path in [*sorted((REPO_ROOT / "notebooks").glob("*.ipynb")), REPO_ROOT / "runbooks" / "h200.ipynb"]:
        committed = path.read_text()
        out = subprocess.run(
            [sys.executable, "-c", no_nbformat, str(STRIP)],
            input=committed,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, f"{path.name}: {out.stderr[-500:]}"
        assert out.stdout == committed, path.name
