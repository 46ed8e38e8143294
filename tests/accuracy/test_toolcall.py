"""Built-in tool-call eval: K2-Vendor-Verifier's summary definitions, the trigger F1, a real run
against the emulator, resume, and the K2VV parsers on the files the built-in eval writes."""

from __future__ import annotations

import json

import pytest

from kimi_runbooks.accuracy import toolcall_eval as tc
from kimi_runbooks.accuracy.toolcall_samples import PROMPTS, TOOLS, write_ci_samples
from kimi_runbooks.emulator.testing import emulator_server

MODEL = "moonshotai/Kimi-K2.6"
WEATHER = [t for t in TOOLS if t["function"]["name"] == "get_weather"]


def _call(name: str, args: str) -> dict:
    return {"id": f"functions.{name}:0", "type": "function", "function": {"name": name, "arguments": args}}


def _row(i: int, status: str = "success", finish: str | None = "stop", valid: bool | None = None) -> dict:
    return {
        "data_index": i,
        "request": {},
        "response": {},
        "status": status,
        "finish_reason": finish,
        "tool_calls_valid": valid,
        "duration_ms": 5,
    }


# --- schema validation (K2VV's validate_tool_call) ------------------------------------------


@pytest.mark.parametrize(
    "call, ok",
    [
        (_call("get_weather", '{"location": "Oslo"}'), True),
        (_call("get_weather", '{"location": "Oslo", "unit": "kelvin"}'), False),  # enum violated
        (_call("get_weather", '{"unit": "celsius"}'), False),  # required missing
        (_call("get_weather", '{"location": "Oslo",'), False),  # malformed JSON
        (_call("no_such_tool", "{}"), False),  # tool not offered
    ],
)
def test_validate_tool_call(call, ok):
    assert tc.validate_tool_call(call, WEATHER) is ok


def test_one_invalid_call_makes_the_response_invalid():
    resp = {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {"tool_calls": [_call("get_weather", '{"location": "Oslo"}'), _call("get_weather", "{}")]},
            }
        ]
    }
    assert tc.tool_calls_valid({"tools": WEATHER}, resp) == ("tool_calls", False)
    assert tc.tool_calls_valid({"tools": WEATHER}, {"choices": [{"finish_reason": "stop", "message": {}}]}) == (
        "stop",
        None,
    )
    assert tc.tool_calls_valid({"tools": WEATHER}, {"error": "boom"}) == (None, None)


# --- summary = K2VV's compute_summary on a crafted results file -----------------------------


def test_summary_follows_k2vv_definitions(tmp_path):
    rows = [
        _row(1, finish="stop"),
        _row(2, finish="tool_calls", valid=True),
        _row(3, finish="tool_calls", valid=False),
        _row(4, finish="tool_calls", valid=None),  # counted as a schema error, as K2VV does
        _row(5, finish="length"),
        _row(6, finish="content_filter"),
        _row(7, status="failed", finish=None),
        _row(8, finish="tool_calls", valid=True),
        _row(9, status="failed", finish=None),
        _row(9, finish="stop"),  # re-sent on resume: the newest line wins
    ]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = tc.summarize(tc.read_results(path), model="m")
    # By hand from the definitions: 9 distinct requests, 1 failed (7); stop: 1, 9; tool_calls:
    # 2, 3, 4, 8 (valid 2, 8); others: 5 (length), 6 (content_filter).
    assert {k: s[k] for k in tc.SUMMARY_KEYS} == {
        "success_count": 8,
        "failure_count": 1,
        "finish_stop": 2,
        "finish_tool_calls": 4,
        "finish_others": 2,
        "schema_validation_error_count": 2,
        "successful_tool_call_count": 2,
    }
    assert s["finish_others_detail"] == {"length": 1, "content_filter": 1}
    assert s["schema_accuracy"] == pytest.approx(0.5)
    assert s["finish_stop"] + s["finish_tool_calls"] + s["finish_others"] + s["failure_count"] == 9


def test_trigger_f1_matches_a_hand_computation():
    # positives (finish_reason == tool_calls) by data_index
    ours = {1: 1, 2: 1, 3: 1, 4: 1, 5: 0, 6: 0, 7: 0, 8: 0, 9: 0, 10: 0, 11: 1}
    ref = {1: 1, 2: 1, 3: 1, 4: 0, 5: 1, 6: 1, 7: 0, 8: 0, 9: 0, 10: 0, 12: 1}

    def mk(d: dict[int, int]) -> list[dict]:
        return [_row(i, finish="tool_calls" if v else ("stop" if i % 2 else "length")) for i, v in d.items()]

    got = tc.trigger_f1(mk(ours), mk(ref))
    # joined on 1..10: TP = {1,2,3} = 3, FP = {4} = 1, FN = {5,6} = 2, TN = {7,8,9,10} = 4
    assert (got["tp"], got["fp"], got["fn"], got["tn"], got["n"], got["unmatched"]) == (3, 1, 2, 4, 10, 2)
    precision, recall = 3 / 4, 3 / 5
    assert got["tool_call_precision"] == pytest.approx(precision)
    assert got["tool_call_recall"] == pytest.approx(recall)
    assert got["tool_call_f1"] == pytest.approx(2 * precision * recall / (precision + recall))  # 0.6667


def test_summary_metrics_use_reference_names_and_denominators():
    s = {
        "success_count": 9,
        "failure_count": 1,
        "finish_stop": 3,
        "finish_tool_calls": 6,
        "finish_others": 0,
        "schema_validation_error_count": 2,
        "successful_tool_call_count": 4,
        "schema_accuracy": 4 / 6,
    }
    m = {r["metric"]: r for r in tc.summary_metrics(s)}
    assert (m["success"]["value"], m["success"]["n"]) == (9, 10)
    assert (m["schema_valid"]["value"], m["schema_valid"]["n"]) == (4, 6)
    assert (m["schema_errors"]["value"], m["tool_calls_triggered"]["value"]) == (2, 6)


def test_samples_loader_applies_k2vv_rules(tmp_path):
    path = write_ci_samples(tmp_path / "samples.jsonl", tmp_path / "expected.jsonl")
    samples = tc.load_samples(path, model="other-model")
    assert [s.data_index for s in samples] == list(range(1, len(PROMPTS) + 1))
    assert all(s.request["model"] == "other-model" and s.request["stream"] for s in samples)
    assert all(m["role"] != "_input" for s in samples for m in s.request["messages"])
    assert "_input" in path.read_text()  # the file itself keeps K2VV's role name
    assert len(tc.load_samples(path, limit=3)) == 3
    with pytest.raises(FileNotFoundError, match="write_ci_samples"):
        tc.load_samples(tmp_path / "missing.jsonl")


# --- for real, against the emulator -------------------------------------------------------


def test_builtin_eval_against_the_emulator_writes_k2vv_files(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl", tmp_path / "expected.jsonl")
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        run = tc.run_toolcall_eval(
            samples,
            base_url=url + "/v1",
            model=MODEL,
            results_path=tmp_path / "results.jsonl",
            concurrency=4,
            max_tokens=2048,
            reference_path=tmp_path / "expected.jsonl",
        )
    results = tc.read_results(run.results_path)  # the K2VV results parser on our file
    assert len(results) == len(PROMPTS) and run.sent == len(PROMPTS)
    assert set(results[0]) >= {
        "data_index",
        "request",
        "response",
        "status",
        "finish_reason",
        "tool_calls_valid",
        "duration_ms",
    }
    summary = tc.read_summary(run.summary_path)  # the K2VV summary parser on our file
    assert summary == json.loads(json.dumps(tc.summarize(results, model=MODEL)))
    expected_triggers = sum(p[3] for p in PROMPTS)
    assert summary["success_count"] == len(PROMPTS)
    assert summary["finish_tool_calls"] + summary["finish_stop"] + summary["finish_others"] == len(PROMPTS)
    for r in results:
        if r["finish_reason"] == "tool_calls":
            calls = r["response"]["choices"][0]["message"]["tool_calls"]
            assert calls and calls[0]["id"].startswith("functions.")
            assert r["tool_calls_valid"] == all(tc.validate_tool_call(c, r["request"]["tools"]) for c in calls)
    assert run.f1["n"] == len(PROMPTS)
    assert run.f1["tp"] + run.f1["fn"] == expected_triggers


def test_bad_tool_json_is_counted_as_schema_errors(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl")
    with emulator_server(time_scale=0.01, log_startup=False, fault="bad-tool-json") as url:
        run = tc.run_toolcall_eval(
            samples,
            base_url=url + "/v1",
            model=MODEL,
            results_path=tmp_path / "r.jsonl",
            concurrency=4,
            max_tokens=2048,
        )
    s = run.summary
    assert s["finish_tool_calls"] > 0
    assert s["schema_validation_error_count"] == s["finish_tool_calls"] and s["successful_tool_call_count"] == 0


def test_rerun_skips_finished_requests_and_resends_failed_ones(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl")
    out = tmp_path / "results.jsonl"
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        first = tc.run_toolcall_eval(
            samples, base_url=url + "/v1", model=MODEL, results_path=out, limit=5, concurrency=2, max_tokens=2048
        )
        assert first.sent == 5
        # fake a failure for data_index 2: a rerun must send it again, and the new line must win
        lines = out.read_text().splitlines()
        failed = [json.loads(x) for x in lines if json.loads(x)["data_index"] == 2][0]
        failed.update(status="failed", finish_reason=None, response={"error": "x"})
        out.write_text("\n".join([x for x in lines if json.loads(x)["data_index"] != 2] + [json.dumps(failed)]) + "\n")
        second = tc.run_toolcall_eval(
            samples, base_url=url + "/v1", model=MODEL, results_path=out, concurrency=4, max_tokens=2048
        )
    assert second.skipped == 4 and second.sent == len(PROMPTS) - 4
    indices = [json.loads(x)["data_index"] for x in out.read_text().splitlines()]
    assert sorted(set(indices)) == list(range(1, len(PROMPTS) + 1))
    assert indices.count(2) == 2 and len(indices) == len(PROMPTS) + 1
    assert second.summary["success_count"] == len(PROMPTS) and second.summary["failure_count"] == 0


def test_failed_requests_are_rows_not_exceptions(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl")
    run = tc.run_toolcall_eval(
        samples,
        base_url="http://127.0.0.1:9/v1",
        model=MODEL,
        results_path=tmp_path / "r.jsonl",
        limit=2,
        max_retries=0,
        timeout=5,
    )
    assert run.summary["failure_count"] == 2 and run.summary["success_count"] == 0
    assert all("error" in r["response"] for r in tc.read_results(run.results_path))
