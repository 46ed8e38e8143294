"""Built-in tool-call eval: K2-Vendor-Verifier's summary definitions, the trigger F1, a real run
against the emulator, resume, and the K2VV parsers on the files the built-in eval writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.accuracy import toolcall_eval as tc
from kimi_runbooks.accuracy.toolcall_samples import (
    MULTI_TURN,
    PROMPTS,
    TOOLS,
    ci_samples,
    expected_triggers,
    write_ci_samples,
)
from kimi_runbooks.accuracy.toolcall_turns import is_multi_turn, kimi_id_counts
from kimi_runbooks.emulator.testing import emulator_server

MODEL = "moonshotai/Kimi-K2.6"
N = len(PROMPTS) + len(MULTI_TURN)  # the CI set: single-turn samples, then multi-turn ones
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
    assert [s.data_index for s in samples] == list(range(1, N + 1))
    assert all(s.request["model"] == "other-model" and s.request["stream"] for s in samples)
    assert all(m["role"] != "_input" for s in samples for m in s.request["messages"])
    assert "_input" in path.read_text()  # the file itself keeps K2VV's role name
    assert len(tc.load_samples(path, limit=3)) == 3
    with pytest.raises(FileNotFoundError, match="write_ci_samples"):
        tc.load_samples(tmp_path / "missing.jsonl")


# --- for real, against the emulator -------------------------------------------------------


def _on_emulator(samples: Any, results_path: Path, fault: str | None = None, **settings: Any) -> Any:
    """The built-in eval against a fast emulator (`fault` injected), 4 requests at a time."""
    with emulator_server(time_scale=0.01, log_startup=False, **({"fault": fault} if fault else {})) as url:
        server = tc.ToolcallServer(url + "/v1", MODEL)
        requests = tc.ToolcallRequests(concurrency=4, max_tokens=2048)
        return tc.run_toolcall_eval(samples, server, results_path, requests, **settings)


def test_builtin_eval_against_the_emulator_writes_k2vv_files(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl", tmp_path / "expected.jsonl")
    run = _on_emulator(samples, tmp_path / "results.jsonl", reference_path=tmp_path / "expected.jsonl")
    results = tc.read_results(run.results_path)  # the K2VV results parser on our file
    assert len(results) == N and run.sent == N
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
    triggers = sum(expected_triggers())
    assert summary["success_count"] == N
    assert summary["finish_tool_calls"] + summary["finish_stop"] + summary["finish_others"] == N
    for r in results:
        if r["finish_reason"] == "tool_calls":
            calls = r["response"]["choices"][0]["message"]["tool_calls"]
            assert calls and calls[0]["id"].startswith("functions.")
            assert r["tool_calls_valid"] == all(tc.validate_tool_call(c, r["request"]["tools"]) for c in calls)
    assert run.f1["n"] == N
    assert run.f1["tp"] + run.f1["fn"] == triggers


def test_bad_tool_json_is_counted_as_schema_errors(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl")
    run = _on_emulator(samples, tmp_path / "r.jsonl", fault="bad-tool-json")
    s = run.summary
    assert s["finish_tool_calls"] > 0
    assert s["schema_validation_error_count"] == s["finish_tool_calls"] and s["successful_tool_call_count"] == 0


def test_rerun_skips_finished_requests_and_resends_failed_ones(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl")
    out = tmp_path / "results.jsonl"
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        server = tc.ToolcallServer(url + "/v1", MODEL)
        first = tc.run_toolcall_eval(samples, server, out, tc.ToolcallRequests(limit=5, concurrency=2, max_tokens=2048))
        assert first.sent == 5
        # fake a failure for data_index 2: a rerun must send it again, and the new line must win
        lines = out.read_text().splitlines()
        failed = [json.loads(x) for x in lines if json.loads(x)["data_index"] == 2][0]
        failed.update(status="failed", finish_reason=None, response={"error": "x"})
        out.write_text("\n".join([x for x in lines if json.loads(x)["data_index"] != 2] + [json.dumps(failed)]) + "\n")
        second = tc.run_toolcall_eval(samples, server, out, tc.ToolcallRequests(concurrency=4, max_tokens=2048))
    assert second.skipped == 4 and second.sent == N - 4
    indices = [json.loads(x)["data_index"] for x in out.read_text().splitlines()]
    assert sorted(set(indices)) == list(range(1, N + 1))
    assert indices.count(2) == 2 and len(indices) == N + 1
    assert second.summary["success_count"] == N and second.summary["failure_count"] == 0


def test_failed_requests_are_rows_not_exceptions(tmp_path):
    samples = write_ci_samples(tmp_path / "samples.jsonl")
    run = tc.run_toolcall_eval(
        samples,
        tc.ToolcallServer("http://127.0.0.1:9/v1", MODEL),
        tmp_path / "r.jsonl",
        tc.ToolcallRequests(limit=2, max_retries=0, timeout=5),
    )
    assert run.summary["failure_count"] == 2 and run.summary["success_count"] == 0
    assert all("error" in r["response"] for r in tc.read_results(run.results_path))


# --- multi-turn samples -----------------------------------------------------------------------


def test_multi_turn_samples_are_recognised_and_their_ids_checked():
    single, multi = ci_samples()[0], ci_samples()[-1]
    assert not is_multi_turn(single) and is_multi_turn(multi) and not is_multi_turn(None)
    history = [{"role": "assistant", "tool_calls": [_call("get_weather", "{}"), _call("calculate", "{}")]}]
    good = {"id": "functions.send_email:2", "function": {"name": "send_email", "arguments": "{}"}}
    restarted = {"id": "functions.send_email:0", "function": {"name": "send_email", "arguments": "{}"}}
    rows = [
        {"request": {"messages": history}, "response": {"choices": [{"message": {"tool_calls": [good]}}]}},
        {"request": {"messages": history}, "response": {"choices": [{"message": {"tool_calls": [restarted]}}]}},
        {"request": {"messages": history}, "response": {"error": "x"}},
    ]
    assert kimi_id_counts(rows) == {"tool_calls_returned": 2, "kimi_ids_in_sequence": 1}


def _eval(tmp_path, name, multi_turn):
    samples = write_ci_samples(tmp_path / f"{name}.jsonl", tmp_path / f"{name}-expected.jsonl", multi_turn=multi_turn)
    return _on_emulator(samples, tmp_path / f"{name}-results.jsonl", reference_path=tmp_path / f"{name}-expected.jsonl")


def test_multi_turn_samples_are_counted_and_single_turn_metrics_stay_the_same(tmp_path):
    only_single = _eval(tmp_path, "single", multi_turn=False)
    mixed = _eval(tmp_path, "mixed", multi_turn=True)
    old_keys = {"model", *tc.SUMMARY_KEYS, "finish_others_detail", "schema_accuracy"}
    assert set(only_single.summary) == old_keys  # a single-turn file: the summary K2VV writes, nothing added
    single_part = {k: v for k, v in only_single.summary.items() if k != "model"}
    assert mixed.summary["single_turn"] == single_part  # the same numbers on the same samples
    multi = mixed.summary["multi_turn"]
    assert multi["success_count"] == len(MULTI_TURN)
    assert multi["finish_tool_calls"] == sum(m[2] for m in MULTI_TURN) == 2
    assert multi["successful_tool_call_count"] == 2 and multi["schema_accuracy"] == 1.0
    assert multi["tool_calls_returned"] == multi["kimi_ids_in_sequence"] == 2
    for key in tc.SUMMARY_KEYS:  # K2VV's totals count every sample
        assert mixed.summary[key] == only_single.summary[key] + multi[key]
    ids = [
        c["id"]
        for r in tc.read_results(mixed.results_path)
        if is_multi_turn(r["request"]) and r["finish_reason"] == "tool_calls"
        for c in r["response"]["choices"][0]["message"]["tool_calls"]
    ]
    assert sorted(ids) == ["functions.search_web:1", "functions.send_email:2"]
    old_rows = tc.summary_metrics(only_single.summary, only_single.f1)
    assert not any(r["metric"].startswith("multi_turn") for r in old_rows)
    rows = {r["metric"]: r for r in tc.summary_metrics(mixed.summary, mixed.f1)}
    assert (rows["multi_turn_samples"]["value"], rows["multi_turn_samples"]["n"]) == (len(MULTI_TURN), N)
    assert (rows["multi_turn_kimi_ids"]["value"], rows["multi_turn_kimi_ids"]["n"]) == (2, 2)
    assert mixed.f1["tool_call_f1"] == only_single.f1["tool_call_f1"] == 1.0  # the emulator triggers as expected
