"""Write the project's source notebooks from the cell lists below (outputs stripped).

Notebooks are generated so their cells stay short and reviewable as Python; run
`python scripts/make_notebooks.py` after editing a cell list here. Only notebooks listed in
NOTEBOOKS are (re)written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]


def notebook(cells: list[tuple[str, str]], parameters: str | None = None) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    out = []
    for kind, text in cells:
        if kind == "md":
            out.append(new_markdown_cell(text.strip()))
        elif kind == "parameters":
            cell = new_code_cell(text.strip())
            cell.metadata["tags"] = ["parameters"]
            out.append(cell)
        elif kind == "check":  # compared by nbval
            cell = new_code_cell(text.strip())
            cell.metadata["tags"] = ["nbval-check-output"]
            out.append(cell)
        else:
            out.append(new_code_cell(text.strip()))
    nb.cells = out
    return nb


COMMAND_GENERATOR = [
    ("md", """
# Kimi-K2 / Kimi-K2.6 launch command generator

Pick a platform and the knobs; the plan below is rebuilt on every change by the same
`recipes.plan` the runbooks and `kimi-runbooks plan` use. It shows the `sglang serve` command,
the `docker run` form, per-node commands for multi-node platforms, the memory / KV-cache
estimate, and every validation rule that fails (with its fix and source).
Executed headlessly (papermill, CI), the notebook prints the default plan as text.
"""),
    ("parameters", """
platform = "h200"
model = None            # None: the platform recipe's model
tp = None
dp = None
ep = None
enable_dp_attention = None
kv_cache_dtype = None
context_length = None
speculative = False
sglang_version = "0.5.9"
"""),
    ("code", """
from kimi_runbooks.plan_view import command_generator, plan_text

config = {k: v for k, v in dict(
    platform=platform, model=model, tp=tp, dp=dp, ep=ep, enable_dp_attention=enable_dp_attention,
    kv_cache_dtype=kv_cache_dtype, context_length=context_length, speculative=speculative,
    sglang_version=sglang_version).items() if v is not None}
"""),
    ("md", "## The plan for the parameters above (text)"),
    ("check", "print(plan_text(config))"),
    ("md", "## Interactive form (needs a live Jupyter kernel)"),
    ("code", "command_generator()"),
]

NOTEBOOKS = {
    "notebooks/command_generator.ipynb": COMMAND_GENERATOR,
}


def main(selected: list[str]) -> None:
    for rel, cells in NOTEBOOKS.items():
        if selected and rel not in selected:
            continue
        path = ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook(cells), path)
        print(f"wrote {rel}")


if __name__ == "__main__":
    main(sys.argv[1:])
