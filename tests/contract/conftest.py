"""What the contract tests share: the bench tool env's interpreter (SGLang 0.5.23 judges there) and the
one way to run SGLang's checker on a captured file."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.tools.envs import OFFLINE_ENV, ToolEnvError, tool_env

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def bench_python() -> str:
    try:
        return str(tool_env("bench").python)
    except ToolEnvError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but the bench tool env is missing: {exc}")
        pytest.skip(f"bench tool env missing: {exc}")


def run_in_bench_env(
    bench_python: str, script: str, *args: Path, report: Path, ok_codes: tuple[int, ...] = (0, 1)
) -> dict[str, Any]:
    """Run tests/contract/<script> with SGLang's interpreter and read its JSON report (a checker exits 1
    when it judged mismatches: still a report)."""
    proc = subprocess.run(
        [bench_python, str(HERE / script), *map(str, args), str(report)],
        capture_output=True,
        text=True,
        timeout=600,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **OFFLINE_ENV},
        check=False,
    )
    if proc.returncode not in ok_codes or not report.exists():
        pytest.fail(f"{script} could not run in the bench env (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(report.read_text())  # type: ignore[no-any-return]


def explain(report: dict[str, Any], limit: int = 30) -> str:
    """The checker's mismatches as lines a failing assertion shows (surface, case, where, both values)."""
    lines = [f"{len(report['mismatches'])} mismatch(es) with SGLang {report['sglang_version']}:"]
    for m in report["mismatches"][:limit]:
        surface = f"[{m['surface']}] " if m.get("surface") else ""
        lines.append(
            f"  {surface}{m['case']}: {m['where']}: emulator={json.dumps(m['emulator'])[:200]}"
            f" sglang={json.dumps(m['sglang'])[:200]}"
        )
    return "\n".join(lines)
