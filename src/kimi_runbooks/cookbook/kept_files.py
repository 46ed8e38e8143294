"""Where the kept cookbook pages and their generated recipes live, and reading them (no node, no
composing): the one module the generator (kept.py), the snippet reader and the snippet recipes all
read the files through, so none of them imports another for a path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..catalog.params_models import ParamsError

SOURCES_FILE = "sources.yaml"
GENERATED_DIR = "generated"


def cookbook_dir(params_dir: Path) -> Path:
    return params_dir / "cookbook"


def read_sources(params_dir: Path) -> dict[str, Any]:
    path = cookbook_dir(params_dir) / SOURCES_FILE
    if not path.is_file():
        return {"pages": {}}
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data.setdefault("pages", {})
    return data


def generated_path(params_dir: Path, page: str, commit: str) -> Path:
    return cookbook_dir(params_dir) / GENERATED_DIR / f"{page}@{commit[:8]}.yaml"


def load_generated(params_dir: Path, page: str, commit: str) -> dict[str, Any]:
    path = generated_path(params_dir, page, commit)
    if not path.is_file():
        raise ParamsError(
            f"{path} is missing: the recipes of cookbook page {page} at {commit[:8]} were never generated. "
            "Fix: run `kimi-runbooks cookbook sync --regenerate`"
        )
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data: dict[str, Any] = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
    return data
