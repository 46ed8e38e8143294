"""The notebooks' parameters cells are the option models' fields with the models' defaults: a
default typed by hand into scripts/notebook_cells/ (a "0.5.9" beside DEFAULT_SGLANG_VERSION, a
knob the model does not have) fails here, not at a user's run."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import nbformat
import pytest
from pydantic import BaseModel

from kimi_runbooks.accuracy import AccuracyOptions
from kimi_runbooks.deploy import DeployOptions
from kimi_runbooks.generator import NOTEBOOK_KNOBS, GeneratorOptions
from kimi_runbooks.invoke import InvokeOptions
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import EXAMPLE_PLATFORM, PlanConfig
from kimi_runbooks.runbook import RunbookOptions
from kimi_runbooks.speed import SpeedStageOptions


def cell_defaults(notebook: Path) -> dict[str, Any]:
    """name -> the literal value of each assignment in the notebook's parameters cell."""
    nb = nbformat.read(notebook, as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    out = {}
    for node in ast.parse(cell.source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = ast.literal_eval(node.value)
        elif isinstance(node, ast.Assign):
            out.update({t.id: ast.literal_eval(node.value) for t in node.targets if isinstance(t, ast.Name)})
    return out


def model_defaults(model: type[BaseModel], names: Any = None) -> dict[str, Any]:
    fields = model.model_fields
    return {n: fields[n].get_default(call_default_factory=True) for n in (names or fields)}


EXPECTED = {
    "notebooks/deploy.ipynb": lambda: {
        "run_dir": None,
        **model_defaults(PlanConfig, [n for n in PlanConfig.model_fields if n != "platform"]),
        "platform": EXAMPLE_PLATFORM,
        **model_defaults(DeployOptions),
    },
    "notebooks/invoke.ipynb": lambda: {"run_dir": None, **model_defaults(InvokeOptions)},
    "notebooks/speed_bench.ipynb": lambda: {"run_dir": "outputs/speed-bench", **model_defaults(SpeedStageOptions)},
    "notebooks/accuracy.ipynb": lambda: {"run_dir": "outputs/accuracy", **model_defaults(AccuracyOptions)},
    "notebooks/command_generator.ipynb": lambda: {
        **model_defaults(PlanConfig, [n for n in NOTEBOOK_KNOBS if n != "platform"]),
        "platform": EXAMPLE_PLATFORM,
        **model_defaults(GeneratorOptions),
    },
}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_parameters_cell_is_the_option_models(rel: str) -> None:
    assert cell_defaults(REPO_ROOT / rel) == EXPECTED[rel]()


RUNBOOK_VALUES = {"launcher", "time_scale"}
"""Runbook options the runbooks set on purpose (scripts/notebook_cells/runbooks.py says why)."""


def test_runbook_options_keep_their_model_defaults() -> None:
    for path in sorted((REPO_ROOT / "runbooks").glob("*.ipynb")):
        cell = cell_defaults(path)
        assert set(cell) == set(PlanConfig.model_fields) | set(RunbookOptions.model_fields), path.name
        for name, default in model_defaults(RunbookOptions).items():
            if name not in RUNBOOK_VALUES:
                assert cell[name] == default, (path.name, name)


def test_a_hand_typed_default_is_caught(tmp_path: Path) -> None:
    """The check itself: a parameters cell with a typed-out version that differs from the model fails."""
    nb = nbformat.read(REPO_ROOT / "notebooks/command_generator.ipynb", as_version=4)
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace(repr(PlanConfig.model_fields["sglang_version"].default), "'0.5.6'")
    nbformat.write(nb, tmp_path / "cg.ipynb")
    assert cell_defaults(tmp_path / "cg.ipynb") != EXPECTED["notebooks/command_generator.ipynb"]()
