"""git clean filter for the generated notebooks: what a kernel added never reaches a commit.

Stepping through runbooks/<platform>.ipynb in JupyterLab fills in outputs, execution counts and
per-cell run metadata; `make setup` registers this script as the `notebook-outputs` filter and
.gitattributes applies it to notebooks/ and runbooks/, so git sees the notebook as generated
(scripts/make_notebooks.py writes the same bytes). Input that is not a notebook passes through.

    python scripts/strip_notebook_outputs.py < executed.ipynb > clean.ipynb
"""

from __future__ import annotations

import sys

import nbformat

KEPT_CELL_METADATA = ("tags",)
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")


def strip(text: str) -> str:
    try:
        nb = nbformat.reads(text, as_version=4)
    except Exception:  # noqa: BLE001 - a filter must never lose the file it was given
        return text
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in KEPT_CELL_METADATA}
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in KEPT_NOTEBOOK_METADATA}
    if "language_info" in nb.metadata:
        nb.metadata["language_info"] = {"name": nb.metadata["language_info"].get("name", "python")}
    return nbformat.writes(nb) + "\n"


if __name__ == "__main__":
    sys.stdout.write(strip(sys.stdin.read()))
