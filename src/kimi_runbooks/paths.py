"""Where the checkout's folders are (the package is installed editable from the repository)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PARAMS_DIR = REPO_ROOT / "params"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"
RUNBOOKS_DIR = REPO_ROOT / "runbooks"
OUTPUTS_DIR = REPO_ROOT / "outputs"
"""Where run folders go by default: the checkout's outputs/ (ignored by git), whatever the working
directory (a notebook opened in JupyterLab runs in runbooks/)."""
