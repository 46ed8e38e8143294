"""Speed failures you can read (issue 14, items 2 and 3).

The readiness chain replaces the hard GET /health (a server without it still runs its scenarios);
a failed scenario shows the line of the log that names the cause, in full, and its per-request
errors (`--output-details`); the all-requests-failed crash of bench_serving 0.5.23 is a clear
failed row; failed scenarios are failed (not "skipped") in the report, and fail the stage.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from kimi_runbooks import report, speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed.bench_failure import error_line, failure_text, request_details
from kimi_runbooks.target.locate import RunHandle, write_handle
from tests.support import FAKE_BENCH, run_notebook
from tests.support.openai_stand_in import StandIn, stand_in_server

ARGS_DUMP = "benchmark_args=Namespace(" + ", ".join(f"arg{i}={i}" for i in range(200)) + ")"


def _sc(sid: str, conc: int = 1) -> Scenario:
    return Scenario(
        id=sid,
        dataset="random-ids",
        input_len=64,
        output_len=16,
        num_prompts=4,
        max_concurrency=conc,
        range_ratio=1.0,
        warmup_requests=1,
        backend="sglang-oai-chat",
    )


def _run(url: str, tmp_path: Path, scenarios: list[Scenario], env: dict[str, str] | None = None, **target):
    handle = RunHandle(base_url=url, model=target.pop("model", "stand-in-model"), launcher="external", **target)
    speed.run_scenarios(
        scenarios,
        handle,
        RunFolder.create(tmp_path),
        command_prefix=FAKE_BENCH,
        env=env or {},
        progress=False,
        verify_tokens=False,
    )
    return {r["scenario"]: r for r in read_jsonl(tmp_path / "bench.jsonl")}


# ------------------------------------------------------------------ the error line, in full


def test_the_error_line_is_found_at_the_end_of_a_long_log():
    warmup = (
        "ValueError: Warmup failed - Please make sure benchmark arguments are correctly specified. "
        'Error: Unauthorized: {"detail":"Invalid API key"}'
    )
    log = "\n".join(
        [
            ARGS_DUMP,
            "Namespace(...)",
            "Starting warmup",
            "Traceback (most recent call last):",
            '  File "serving.py", line 1598, in benchmark',
            "    raise ValueError(",
            warmup,
        ]
    )
    assert error_line(log) == warmup  # in full, though the log's first 300 characters are arguments
    not_ready = "Server at http://127.0.0.1:18082/v1/models is not ready. Exiting."
    assert error_line(ARGS_DUMP + "\nServer did not become ready within 60s timeout.\n" + not_ready) == not_ready
    assert error_line(ARGS_DUMP + "\nall fine\n") is None
    assert failure_text(1, log, False) == f"bench_serving exited with 1 and wrote no result: {warmup}"


def test_all_requests_failed_crash_becomes_a_clear_sentence():
    log = "\n".join(
        [
            ARGS_DUMP,
            "UserWarning: All requests failed. This is likely due to a misconfiguration",
            "Traceback (most recent call last):",
            "    p90_e2e_latency_ms=np.percentile(e2e_latencies, 90)",
            "IndexError: index -1 is out of bounds for axis 0 with size 0",
        ]
    )
    text = failure_text(1, log, False)
    assert text.startswith("no request completed: bench_serving reported that all requests failed")
    assert "IndexError in calculate_metrics" in text and "warmup_requests >= 1" in text
    assert "last error line: IndexError" not in text  # the crash is explained, not shown as the cause


def test_request_details_summarise_per_request_errors(tmp_path):
    out = tmp_path / "o.jsonl"
    row = {
        "completed": 2,
        "input_lens": [99, 95],
        "output_lens": [16, 0, 0],
        "errors": ["", "ClientPayloadError: not completed", "ClientPayloadError: not completed"],
    }
    out.write_text(json.dumps(row) + "\n")
    got = request_details(out)
    assert got == {
        "requests": 3,
        "failed": 2,
        "errors": ["ClientPayloadError: not completed (x2)"],
        "input_lens": {"min": 95, "max": 99, "total": 194},
        "output_lens": {"min": 0, "max": 16, "total": 16},
    }
    assert request_details(tmp_path / "missing.jsonl") is None


# ------------------------------------------------------- the runner, against a non-SGLang server


def test_a_server_without_health_runs_its_scenarios(tmp_path):
    """Issue 14 item 2: GET /health answers 404 on llama.cpp's server; the scenarios still run."""
    with stand_in_server(StandIn()) as url:
        rows = _run(url, tmp_path, [_sc("nohealth-c1")])
    row = rows["nohealth-c1"]
    assert row["status"] == "ok", row["error"]
    assert "--output-details" in row["argv"]
    assert row["request_details"] == {
        "requests": 4,
        "failed": 0,
        "errors": [],
        "input_lens": {"min": 64, "max": 64, "total": 256},
        "output_lens": {"min": 16, "max": 16, "total": 64},
    }


def test_a_refused_key_fails_fast_naming_api_key_env(tmp_path, monkeypatch):
    monkeypatch.setenv("SPEED_TEST_KEY", "wrong-speed-key-value")
    with stand_in_server(StandIn(api_key="s3cret")) as url:
        rows = _run(url, tmp_path, [_sc("key-c1")], api_key_env="SPEED_TEST_KEY")
    row = rows["key-c1"]
    assert row["status"] == "failed" and row["metrics"] == {} and "returncode" not in row  # no bench run
    assert "auth: HTTP 401" in row["error"] and "the key in $SPEED_TEST_KEY was refused" in row["error"]
    assert "Fix: export SPEED_TEST_KEY=" in row["error"]


def test_failures_show_their_cause_and_request_errors(tmp_path):
    env = {"FAKE_BENCH_FAIL": "warm-c1", "FAKE_BENCH_ALL_FAIL": "none-c1", "FAKE_BENCH_REQUEST_ERRORS": "1"}
    scenarios = [_sc("warm-c1"), _sc("none-c1"), _sc("short-c1")]
    with stand_in_server(StandIn()) as url:
        rows = _run(url, tmp_path, scenarios, env=env)
    warm, none, short = rows["warm-c1"]["error"], rows["none-c1"]["error"], rows["short-c1"]["error"]
    assert warm.startswith("bench_serving exited with 1 and wrote no result: ValueError: Warmup failed")
    assert warm.endswith('Error: Unauthorized: {"detail":"Invalid API key"} (fake)')  # the whole line
    assert "benchmark_args" not in warm
    assert none.startswith("no request completed") and "IndexError in calculate_metrics" in none
    assert short.startswith("only 3 of 4 requests completed")
    assert "1 of 4 requests failed: ClientPayloadError: Response payload is not completed (fake) (x1)" in short
    assert {r["status"] for r in rows.values()} == {"failed"}


def test_failed_scenarios_are_failures_in_the_report_not_skips(tmp_path):
    folder = RunFolder.create(tmp_path / "run")
    with stand_in_server(StandIn()) as url:
        _run(url, folder.path, [_sc("warm-c1"), _sc("fine-c1")], env={"FAKE_BENCH_FAIL": "warm-c1"})
    folder.save_json(folder.runbook, {"stages": ["speed"]})
    data = report.collect(folder)
    kinds = {w.kind: w.text for w in report.warnings(data)}
    assert "failed" in kinds and "ValueError: Warmup failed" in kinds["failed"]
    assert not any("warm-c1" in w.text for w in report.warnings(data) if w.kind == "skipped")
    verdict = report.verdict(data)
    assert verdict.level == "FAIL"
    assert any(r.startswith("speed scenario warm-c1 failed: bench_serving exited with 1") for r in verdict.reasons)
    with pytest.raises(speed.ScenariosFailed, match=r"1 of 2 speed scenario\(s\) failed:\n  - warm-c1: bench_serving"):
        speed.raise_if_failed(speed.load_results(folder.path))


@pytest.mark.slow  # a whole speed stage whose scenarios fail: ~10 s; make test-all and CI run it
def test_a_stage_whose_scenarios_failed_is_not_ok(tmp_path, monkeypatch):
    """The notebook ends by raising, so the runbook records the stage as failed (it said "ok")."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setenv("FAKE_BENCH_FAIL", "smoke-random-ids-c1")
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        write_handle(
            RunFolder.of(run_dir, create=True),
            RunHandle(base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200", emulated=True),
        )
        params = {
            "run_dir": str(run_dir),
            "scenarios": ["smoke-random-ids-c1"],
            "command_prefix": FAKE_BENCH,
            "tokenizer": "unused-by-fake",
            "verify_tokens": False,
            "timeout_s": 60,
        }
        out = tmp_path / "out.ipynb"
        with pytest.raises(Exception) as err:
            run_notebook(
                str(REPO_ROOT / "notebooks/speed_bench.ipynb"),
                str(out),
                parameters=params,
            )
    assert "ScenariosFailed" in str(err.value) and "smoke-random-ids-c1: bench_serving exited with 1" in str(err.value)
    text = "\n".join(o.get("text", "") for c in nbformat.read(out, as_version=4).cells for o in c.get("outputs", []))
    assert "smoke-random-ids-c1: failed - bench_serving exited with 1 and wrote no result: ValueError" in text
