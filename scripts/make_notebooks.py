"""Write every notebook the project ships from the cell lists in scripts/notebook_cells/.

    python scripts/make_notebooks.py          # (re)write them all (`make notebooks`)
    python scripts/make_notebooks.py --check  # exit 1 and name each committed notebook that differs

Notebooks are generated so their cells stay short and reviewable as Python, and written without
outputs and with stable cell ids, so regenerating an unchanged notebook is byte-identical.
The runbooks' parameters come from params/ (notebook_cells/runbooks.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # notebook_cells/ sits beside this script

from kimi_runbooks.catalog import load_catalog  # noqa: E402
from kimi_runbooks.execution.prewarm import SPEED_KERNEL  # noqa: E402
from kimi_runbooks.stages import STAGES  # noqa: E402
from notebook_cells import runbooks, stages  # noqa: E402

CHECK_TAG = "nbval-check-output"
"""nbval's metadata tag for `# NBVAL_CHECK_OUTPUT`: compared under `pytest --nbval-lax`."""


KERNELS = {"notebooks/speed_bench.ipynb": (SPEED_KERNEL, "Python 3 (kimi-runbooks speed)")}
"""Notebooks with a kernelspec of their own (execution/prewarm.py: the speed stage's starts its
bench worker with the kernel); every other notebook runs on the project's python3 kernel."""


def build(cells: list[tuple[str, str]], kernel: tuple[str, str] = ("python3", "Python 3")) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel[0], "display_name": kernel[1], "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, text in cells:
        if kind == "md":
            nb.cells.append(new_markdown_cell(text.strip()))
            continue
        cell = new_code_cell(text.strip())
        if kind == "parameters":
            cell.metadata["tags"] = ["parameters"]
        elif kind == "check":
            cell.metadata["tags"] = [CHECK_TAG]
        nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):  # stable ids keep regenerated notebooks byte-identical
        cell["id"] = f"cell-{i:02d}"
    return nb


def outputs() -> dict[str, str]:
    """Relative path -> notebook text, for every notebook this script writes."""
    catalog = load_catalog()
    missing = [s.name for s in STAGES if s.name not in stages.CELLS_BY_STAGE]
    if missing:
        raise SystemExit(f"stages {missing} (kimi_runbooks.stages.STAGES) have no cells in notebook_cells/stages.py")
    cell_lists = {f"notebooks/{s.notebook}": stages.CELLS_BY_STAGE[s.name] for s in STAGES}
    cell_lists.update({f"notebooks/{name}": cells for name, cells in stages.OTHER_NOTEBOOKS.items()})
    for pid, platform in sorted(catalog.platforms.items()):
        cell_lists[f"runbooks/{pid}.ipynb"] = runbooks.runbook_cells(platform, catalog)
    return {
        rel: nbformat.writes(build(cells, KERNELS.get(rel, ("python3", "Python 3")))) + "\n"
        for rel, cells in cell_lists.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing; exit 1 on drift")
    args = parser.parse_args(argv)
    drift = []
    for rel, text in outputs().items():
        path = ROOT / rel
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                drift.append(rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {rel}")
    if drift:
        print(
            "notebooks out of step with scripts/notebook_cells/ (run `make notebooks`): " + ", ".join(drift),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
