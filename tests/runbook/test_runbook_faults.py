"""Issue 13 case 2: a stage whose work failed is not "ok", and the verdict is never PASS with a
failure counted: the runbook against an emulator that dies mid-stream, or answers malformed
tool-call JSON, during the accuracy stage."""

from __future__ import annotations

import json
import re

import pytest

from kimi_runbooks import report, runbook
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.rundir import RunFolder, read_jsonl

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out


def _run_against(fault: str, tmp_path) -> tuple[report.RunData, list[dict]]:
    emulator = start_subprocess(["--time-scale", "0.01", "--fault", fault])
    run = tmp_path / "run"
    try:
        result = runbook.run_runbook(
            {
                "platform": "h200",
                "launcher": "external",
                "base_url": emulator.base_url,
                "stages": ["deploy", "accuracy", "report"],
                "eval_suites": ["toolcall-builtin"],
                "run_dir": str(run),
                "fail_on_error": False,
            }
        )
    finally:
        emulator.stop()
    assert result.verdict.level == "FAIL", result.verdict
    rows = [r for r in read_jsonl(run / "stages.jsonl") if r.get("stage") == "accuracy"]
    return report.collect(RunFolder.of(run)), rows


def test_a_server_that_dies_mid_stream_fails_the_accuracy_stage_and_the_verdict(tmp_path):
    data, rows = _run_against("crash-mid-stream", tmp_path)
    assert rows[-1]["status"] == "failed", rows
    # requests already answered when the stream dies may have succeeded (the eval sends several at
    # once): "every request failed" or "most requests failed (N of M)", either fails the stage
    failed = re.compile(r"every request failed|most requests failed \(\d+ of \d+\)")
    assert failed.search(rows[-1]["detail"]), rows[-1]["detail"]
    assert data.stages["accuracy"].status == "failed"
    verdict = report.verdict(data)
    assert verdict.level == "FAIL" and any(failed.search(r) for r in verdict.reasons)
    suites = {r["suite"] for r in data.accuracy or []}
    assert suites == {"toolcall-builtin"}  # eval_suites reached the accuracy notebook
    assert re.search(r'class="badge"[^>]*>FAIL<', (tmp_path / "run" / "report.html").read_text())


def test_malformed_tool_call_json_fails_the_accuracy_stage(tmp_path):
    data, rows = _run_against("bad-tool-json", tmp_path)
    assert rows[-1]["status"] == "failed" and "schema_accuracy 0.0" in rows[-1]["detail"], rows
    verdict = report.verdict(data)
    assert verdict.level == "FAIL" and any("schema_accuracy 0.0" in r for r in verdict.reasons)


@pytest.mark.parametrize(
    ("success", "expected"),
    [(0, "FAIL"), (1, "FAIL"), (5, "FAIL"), (6, "WARN"), (9, "WARN"), (12, "PASS")],  # most failed: failed
)
def test_the_verdict_follows_the_failed_count(tmp_path, success, expected):
    """A crafted run folder: 12 tool-call requests of which `success` succeeded."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "runbook.json").write_text(json.dumps({"stages": ["accuracy"], "launcher": "external"}))
    (run / "stages.jsonl").write_text(json.dumps({"stage": "accuracy", "status": "ok"}) + "\n")
    rows = [
        {"suite": "toolcall-builtin", "metric": "success", "value": success, "n": 12, "kind": "count"},
        {"suite": "toolcall-builtin", "metric": "schema_accuracy", "value": 1.0, "n": 5, "kind": "rate"},
    ]
    (run / "accuracy.jsonl").write_text(
        "".join(json.dumps({**r, "status": "ok", "fingerprint": "f"}) + "\n" for r in rows)
    )
    data = report.collect(RunFolder.of(run))
    verdict = report.verdict(data)
    assert verdict.level == expected, verdict
    assert data.stages["accuracy"].status == {"FAIL": "failed", "WARN": "degraded", "PASS": "ok"}[expected]


def test_a_failed_speed_scenario_is_a_failed_speed_stage(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "runbook.json").write_text(json.dumps({"stages": ["speed"], "launcher": "external"}))
    (run / "stages.jsonl").write_text(json.dumps({"stage": "speed", "status": "ok"}) + "\n")
    rows = [
        {"scenario": "smoke-random-ids-c1", "status": "ok", "metrics": {"completed": 8}},
        {"scenario": "smoke-random-ids-c4", "status": "failed", "metrics": {}, "error": "bench_serving exited with 1"},
    ]
    (run / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = report.collect(RunFolder.of(run))
    assert data.stages["speed"].status == "failed"
    assert "1 of 2 scenarios failed" in data.stages["speed"].detail
    assert report.verdict(data).level == "FAIL"
