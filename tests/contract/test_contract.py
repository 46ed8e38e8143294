"""Contract suite: the emulator answers as SGLang 0.5.23 does, judged by SGLang's own code.

The case table (cases.py) goes to two emulators (plain and API-key), the raw answers are
captured (capture.py), and the bench tool env's python, which has the real ``sglang``
package, replays each request through SGLang's own HTTP server and serving layer and diffs
(sglang_check.py, sglang_ref.py, replay.py, compare.py, surface_checks.py). Sources the
verdicts rest on, all in the installed sglang 0.5.23: srt/entrypoints/http_server.py
(routes, exception handlers, /generate streaming errors, /v1/models/{id}, /server_info,
/model_info), srt/entrypoints/openai/serving_base.py, serving_chat.py, serving_completions.py,
sse_utils.py, usage_processor.py, protocol.py, srt/utils/auth.py, srt/utils/common.py
(build_server_info), srt/managers/tokenizer_manager.py (_validate_one_request,
_handle_batch_output), srt/managers/scheduler_components/internal_state.py,
srt/parser/reasoning_parser.py, srt/function_call/kimik2_detector.py,
srt/observability/metrics_collector.py.

Heavy: needs the bench tool env (bash scripts/setup_tool_env.sh bench). Skipped on a machine
without it; with CI=true a missing env is a failure.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from capture import capture, emulators
from cases import CASES, SURFACES

from conftest import explain, run_in_bench_env
from kimi_runbooks.emulator import DEVIATIONS
from kimi_runbooks.emulator.lag import FAMILIES as LAG_FAMILIES

pytestmark = pytest.mark.heavy
HERE = Path(__file__).resolve().parent


def run_contract(bench_python: str, out_dir: Path, *, strict: bool) -> dict[str, Any]:
    """Capture from fresh emulators, judge with SGLang's code; returns the checker's report."""
    captured = out_dir / ("captured-strict.json" if strict else "captured.json")
    with emulators(strict) as urls:
        capture(urls, captured, strict=strict)
    report_path = out_dir / ("report-strict.json" if strict else "report.json")
    return run_in_bench_env(bench_python, "sglang_check.py", captured, report=report_path)


@pytest.fixture(scope="module")
def report(bench_python: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_contract(bench_python, tmp_path_factory.mktemp("contract"), strict=False)


def test_pinned_sglang_is_the_one_judging(report: dict[str, Any]) -> None:
    """When the bench env's SGLang moves, this says so first; the other tests say what changed."""
    assert report["sglang_version"] == report["expected_sglang"], report["sglang_version"]


def test_every_case_was_judged(report: dict[str, Any]) -> None:
    assert set(report["cases"]) == {c.id for c in CASES}
    assert {c.surface for c in CASES} <= set(SURFACES)


@pytest.mark.parametrize("surface", SURFACES)
def test_surface_matches_sglang(report: dict[str, Any], surface: str) -> None:
    found = [m for m in report["mismatches"] if m["surface"] == surface]
    assert not found, explain({**report, "mismatches": found})


def test_only_the_declared_deviations_are_allowed(report: dict[str, Any]) -> None:
    """The checker let through exactly the emulator's DEVIATIONS, and they are few."""
    assert report["deviations"] == [d.as_dict() for d in DEVIATIONS]
    assert Counter(d.kind for d in DEVIATIONS) == Counter(
        {"header": 1, "server_info": 1, "server_info_value": 1, "metric": 1 + len(LAG_FAMILIES)}
    )


def test_strict_mode_matches_with_no_deviation_at_all(bench_python: str, tmp_path: Path) -> None:
    strict = run_contract(bench_python, tmp_path, strict=True)
    assert strict["deviations"] == []
    assert not strict["mismatches"], explain(strict)
