"""git clean filter for the generated notebooks: what a kernel added never reaches a commit.

Stepping through runbooks/<platform>.ipynb in JupyterLab fills in outputs, execution counts and
per-cell run metadata; `make setup` registers this script as the `notebook-outputs` filter and
.gitattributes applies it to notebooks/ and runbooks/, so git sees the notebook as generated
(scripts/make_notebooks.py writes the same bytes). Input that is not a notebook passes through.

git runs the filter once per notebook whenever its index entry looks stale (every notebook on the
first `git status` of a fresh clone, 17 of them); importing nbformat costs ~0.5-1 s of CPU each
time, so that first status took 10-25 s on 2 cores, and the deploy stage's manifest, which asks
git whether the tree is dirty, waited for it in every demo run. A notebook that is already exactly
what this filter writes (the committed ones) is recognised with the json module alone and passed
through; anything else goes through nbformat as before.

    python scripts/strip_notebook_outputs.py < executed.ipynb > clean.ipynb
"""

from __future__ import annotations

import json
import sys

KEPT_CELL_METADATA = ("tags",)
KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")


def already_stripped(text: str) -> bool:
    """True when `text` is byte for byte what strip() would write: nothing to strip and nbformat's
    own layout (sorted keys, indent 1, raw UTF-8, a final newline), so it can pass through as is."""
    try:
        nb = json.loads(text)
    except ValueError:
        return False
    if not isinstance(nb, dict) or nb.get("nbformat") != 4 or not isinstance(nb.get("cells"), list):
        return False
    meta = nb.get("metadata", {})
    if set(meta) - set(KEPT_NOTEBOOK_METADATA) or set(meta.get("language_info", {})) - {"name"}:
        return False
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or set(cell.get("metadata", {})) - set(KEPT_CELL_METADATA):
            return False
        if cell.get("cell_type") == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            return False
    layout = json.dumps(nb, sort_keys=True, indent=1, separators=(",", ": "), ensure_ascii=False) + "\n"
    return text == layout


def strip(text: str) -> str:
    if already_stripped(text):
        return text
    import nbformat  # ~0.5 s: only for a notebook that needs stripping

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
