"""The command generator notebook executes headlessly and prints the plan of its parameters."""

import nbformat

from kimi_runbooks.paths import REPO_ROOT
from tests.support import run_notebook

ROOT = REPO_ROOT


def _text(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_headless_run_prints_the_default_command(tmp_path):
    out = tmp_path / "cg.ipynb"
    run_notebook(str(ROOT / "notebooks/command_generator.ipynb"), str(out), cwd=str(tmp_path), progress_bar=False)
    text = _text(nbformat.read(out, as_version=4))
    assert "sglang serve --model-path moonshotai/Kimi-K2.6 --tp 8" in text
    assert "verdict: VALID" in text


def test_invalid_parameters_show_errors_inline(tmp_path):
    out = tmp_path / "cg.ipynb"
    run_notebook(
        str(ROOT / "notebooks/command_generator.ipynb"),
        str(out),
        parameters={"platform": "mi350x", "tp": 8},
        cwd=str(tmp_path),
        progress_bar=False,
    )
    text = _text(nbformat.read(out, as_version=4))
    assert "INVALID" in text and "amd-aiter-mla-heads" in text
