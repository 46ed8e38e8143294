"""Helpers and data locations shared by the tests (import as `tests.support`)."""

from __future__ import annotations

import sys
from typing import Any

from kimi_runbooks.paths import REPO_ROOT

TESTS_DIR = REPO_ROOT / "tests"
FIXTURES = TESTS_DIR / "fixtures"
FAKES = TESTS_DIR / "fakes"
FAKE_BENCH = [sys.executable, str(TESTS_DIR / "fake_bench" / "fake_bench_serving.py")]
SHARED = REPO_ROOT.parent / "shared"
"""The steering notes beside the checkout (seeds); tests that need them skip without, except in CI."""


def append_jsonl(path: object, row: dict[str, object]) -> None:
    """Tests craft run-folder content directly (the package itself writes only through RunFolder)."""
    import json
    from pathlib import Path

    with Path(str(path)).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


IN_CI = __import__("os").environ.get("CI", "").lower() == "true"


def missing(what: str, fix: str) -> None:
    """A heavy component is absent: skip on a user's machine, fail in CI (CI=true), naming the fix."""
    import pytest

    if IN_CI:
        pytest.fail(f"CI=true and {what} is missing. Fix: {fix}")
    pytest.skip(f"{what} is missing ({fix})")


NOTEBOOK_CELL_TIMEOUT = 900
"""Seconds one cell may run in a test: a hung kernel fails the test instead of blocking CI."""


def run_notebook(source: object, dest: object, **kwargs: object) -> object:
    """Execute a notebook as the package does (IPC kernel), with a per-cell timeout, no progress
    bar, and (unless `cwd` says otherwise) in the folder the executed copy is written to."""
    from pathlib import Path

    from kimi_runbooks.execution.notebook import execute_notebook

    kwargs.setdefault("execution_timeout", NOTEBOOK_CELL_TIMEOUT)
    kwargs.setdefault("progress_bar", False)
    kwargs.setdefault("cwd", str(Path(str(dest)).parent))
    return execute_notebook(source, dest, **kwargs)  # type: ignore[arg-type]


def clean_code_cells(notebook: object, max_lines: int = 15, first_checked: int = 0) -> list[Any]:
    """A source notebook's code cells, checked as committed: the first is papermill's parameters
    cell, none has outputs or an execution count, and each (from `first_checked` on) has at most
    `max_lines` lines (logic lives in the package, not in cells)."""
    import nbformat

    code = [c for c in nbformat.read(str(notebook), as_version=4).cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code)
    assert all(len(c.source.splitlines()) <= max_lines for c in code[first_checked:])
    return code


def tiny_scenario(sid: str, output_len: int = 16, num_prompts: int = 2, **fields: Any) -> Any:
    """A speed scenario small enough for a test: 64 random token ids in, one request at a time, fixed
    lengths, seed 1, one warm-up request; `fields` set or override any other Scenario field (backend,
    extra_args, max_concurrency)."""
    from kimi_runbooks.catalog import Scenario

    defaults: dict[str, Any] = {"dataset": "random-ids", "input_len": 64, "max_concurrency": 1, "range_ratio": 1.0}
    defaults |= {"seed": 1, "warmup_requests": 1}
    return Scenario(id=sid, output_len=output_len, num_prompts=num_prompts, **(defaults | fields))
