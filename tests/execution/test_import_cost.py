"""Every kernel and process of a runbook imports nbformat (papermill, nbconvert, plotly's notebook
renderer); importing kimi_runbooks first keeps jsonschema's IRI checker, ~0.8 s of lark grammars
per process, out of it (kimi_runbooks/__init__.py)."""

from __future__ import annotations

import subprocess
import sys

from kimi_runbooks.paths import REPO_ROOT

PROBE = """
import sys
import kimi_runbooks
import nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)  # jsonschema still validates notebooks
print(sys.modules.get("rfc3987_syntax") is None)
"""


def test_a_notebook_validates_without_loading_the_iri_checker():
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(REPO_ROOT / "notebooks" / "invoke.ipynb")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "True"
