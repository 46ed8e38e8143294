"""Every parameter of every notebook is visible to papermill with a type (`papermill --help-notebook`),
and no parameter line makes papermill warn "Unable to parse line"."""

from __future__ import annotations

import ast
import logging

import nbformat
import papermill as pm
import pytest

from kimi_runbooks.paths import NOTEBOOKS_DIR, RUNBOOKS_DIR

NOTEBOOKS = sorted([*NOTEBOOKS_DIR.glob("*.ipynb"), *RUNBOOKS_DIR.glob("*.ipynb")])


def _parameters_cell(path) -> str:
    nb = nbformat.read(str(path), as_version=4)
    return next(c.source for c in nb.cells if "parameters" in c.metadata.get("tags", []))


def _declared(source: str) -> set[str]:
    tree = ast.parse(source)
    names = set()
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_parameter_has_a_type_and_parses(path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="papermill"):
        inferred = pm.inspect_notebook(str(path))
    assert not [r.message for r in caplog.records if "Unable to parse" in r.message]
    assert set(inferred) == _declared(_parameters_cell(path))
    untyped = [name for name, p in inferred.items() if p["inferred_type_name"] in ("None", "", "Unknown type")]
    assert not untyped, f"{path.name}: parameters without a type: {untyped}"
