"""The one table of stages: name -> notebook -> result file -> package.

The runbook runs the stages in this order, the report reads their result files, and the CLI
names them; none of them keeps its own copy of this table.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .paths import NOTEBOOKS_DIR
from .rundir import RunFolder


@dataclass(frozen=True)
class Stage:
    name: str
    notebook: str
    result_file: str | None  # a RunFolder file name; None for the report (its output is report.html)
    package: str
    does: str
    entry: str | None = None
    """`module:function` of the stage's one entry, `run(folder: RunFolder, options: <Stage>Options)`;
    None while the stage's notebook still drives it cell by cell."""


STAGES: tuple[Stage, ...] = (
    Stage(
        "deploy",
        "deploy.ipynb",
        RunFolder.HANDLE,
        "kimi_runbooks.deploy",
        "launch the plan, wait until ready, record what ran",
        "kimi_runbooks.deploy.stage:run",
    ),
    Stage(
        "invoke",
        "invoke.ipynb",
        RunFolder.INVOKE,
        "kimi_runbooks.invoke",
        "prove each feature works through the openai client",
        "kimi_runbooks.invoke.stage:run",
    ),
    Stage(
        "speed",
        "speed_bench.ipynb",
        RunFolder.BENCH,
        "kimi_runbooks.speed",
        "run the speed scenarios with SGLang's bench_serving",
        "kimi_runbooks.speed.stage:run",
    ),
    Stage(
        "accuracy",
        "accuracy.ipynb",
        RunFolder.ACCURACY,
        "kimi_runbooks.accuracy",
        "run the accuracy suites with the public tools",
        "kimi_runbooks.accuracy.runner:run",
    ),
    Stage("report", "report.ipynb", None, "kimi_runbooks.report", "render report.html for a reviewer"),
)
STAGE_NAMES: tuple[str, ...] = tuple(s.name for s in STAGES)
WORK_STAGES: tuple[str, ...] = tuple(s.name for s in STAGES if s.result_file)
"""The stages that produce results (everything but the report)."""


def stage(name: str) -> Stage:
    for s in STAGES:
        if s.name == name:
            return s
    raise ValueError(f"unknown stage '{name}'. Valid stages: {', '.join(STAGE_NAMES)}.")


def entry_point(name: str) -> Callable[..., Any]:
    """The stage's `run(folder, options)`, imported when asked for (this table sits below the stages)."""
    s = stage(name)
    if s.entry is None:
        raise ValueError(f"stage '{name}' has no run(folder, options) entry yet; run its notebook ({s.notebook}).")
    module, function = s.entry.split(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found


def availability(name: str, notebooks_dir: Path = NOTEBOOKS_DIR) -> str | None:
    """None when the stage's package and notebook exist, else why the stage cannot run here."""
    s = stage(name)
    missing = []
    if importlib.util.find_spec(s.package) is None:
        missing.append(f"package {s.package}")
    if not (notebooks_dir / s.notebook).exists():
        missing.append(f"notebook notebooks/{s.notebook}")
    return ("not available in this checkout: " + ", ".join(missing) + " missing") if missing else None
