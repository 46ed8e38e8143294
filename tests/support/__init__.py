"""Helpers and data locations shared by the tests (import as `tests.support`)."""

from __future__ import annotations

import sys

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
    """Execute a notebook as the package does (IPC kernel), with a per-cell timeout."""
    from kimi_runbooks.execution.notebook import execute_notebook

    kwargs.setdefault("execution_timeout", NOTEBOOK_CELL_TIMEOUT)
    return execute_notebook(source, dest, **kwargs)  # type: ignore[arg-type]
