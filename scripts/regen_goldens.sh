#!/usr/bin/env bash
# Regenerate the nbval golden notebooks under tests/nbval/ ON PURPOSE (after an intended change to
# params/, a notebook or the emulator). Review the diff of the check cells before committing:
#   bash scripts/regen_goldens.sh && git diff tests/nbval/
# CI re-executes them with: pytest --nbval-lax --nbval-sanitize-with tests/nbval/sanitize.cfg tests/nbval/
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
PM=${PAPERMILL:-.venv/bin/papermill}
OUT=tests/nbval
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export KIMI_RUNBOOKS_OUTPUTS="$TMP/outputs"

# 1. the command generator for a platform with rules and env (MI350X): a launch flag changed in
#    params/ changes its checked output.
"$PM" notebooks/command_generator.ipynb "$OUT/command_generator_mi350x.ipynb" \
    -p platform mi350x --cwd "$OUT" --no-progress-bar

# 2. one runbook on the emulator, report-facing cells (plan, verdict, check summary). Stages that
#    need the bench/eval tool environments are left out so the golden is quick and self-contained.
"$PM" runbooks/h200.ipynb "$OUT/runbook_h200.ipynb" \
    -p launcher emulator -p time_scale 0.05 -y 'stages: [deploy, invoke, report]' \
    --cwd "$OUT" --no-progress-bar

# nbval checks the cells tagged `nbval-check-output` (the tag form of NBVAL_CHECK_OUTPUT).
"$PY" - "$OUT"/command_generator_mi350x.ipynb "$OUT"/runbook_h200.ipynb <<'PYEOF'
import sys
import nbformat
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "nbval-check" in tags:  # scripts/make_notebooks.py's name for a checked cell
            tags[tags.index("nbval-check")] = "nbval-check-output"
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    nb.metadata.pop("papermill", None)
    nbformat.write(nb, path)
    print(f"wrote {path}")
PYEOF
