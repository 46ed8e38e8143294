"""The agentic suite: its rules alone, every case against the emulator, and each fault caught by exactly its cases."""

from __future__ import annotations

import json

import pytest

from kimi_runbooks import invoke, report
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.settings import TOOL_FAULT_KINDS
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.invoke import agentic_tools as T
from kimi_runbooks.invoke.agentic_judge import (
    Turn,
    call_problems,
    empty_problems,
    first_difference,
    leak_problems,
    unique_id_problems,
)
from kimi_runbooks.report import show
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle

MODEL = "moonshotai/Kimi-K2.6"
FAST = dict(timeout=20.0, max_tokens_thinking=4096, concurrency=3, parallel=1)


def _at(url: str) -> RunHandle:
    return invoke.resolve_target(base_url=url, model=MODEL)


AGENTIC = list(invoke.AGENTIC_CASES)


# ---------------------------------------------------------------- rules, no server


def _turn(calls=(), finish="tool_calls", content="", reasoning="thinking", **kw):
    return Turn("turn 2", False, reasoning, content, [dict(c, index=i) for i, c in enumerate(calls)], finish, **kw)


def _call(name="get_weather", idx=0, args='{"location": "Paris"}', call_id=None):
    return {"id": call_id or f"functions.{name}:{idx}", "name": name, "arguments": args}


def test_ids_must_be_kimi_format_and_count_the_calls_already_made():
    tools = [T.GET_WEATHER, T.GET_TIME]
    assert call_problems(_turn([_call(idx=3), _call("get_time", 4, '{"city": "Tokyo"}')]), tools, 3) == []
    restarted = call_problems(_turn([_call(idx=0)]), tools, 3)
    assert "should be functions.get_weather:3" in restarted[0] and "10600" in restarted[0]
    uuid = call_problems(_turn([_call(call_id="call_0a1b2c")]), tools, 0)
    assert "not in SGLang's Kimi format" in uuid[0]
    wrong_name = call_problems(_turn([_call(call_id="functions.get_time:0")]), tools, 0)
    assert "names 'get_time'" in wrong_name[0]
    assert unique_id_problems(["functions.a:0", "functions.b:1"]) == []
    assert "functions.a:0" in unique_id_problems(["functions.a:0", "functions.a:0"])[0]


def test_arguments_schema_names_undeclared_and_finish_rules():
    tools = [T.GET_WEATHER]
    bad = call_problems(_turn([_call(args='{"location": "Paris", "unit": "kelvin"}')]), tools, 0)
    assert "do not match the schema" in bad[0] and "unit" in bad[0]
    assert "not valid JSON" in call_problems(_turn([_call(args='{"location": ')]), tools, 0)[0]
    assert "not a JSON object" in call_problems(_turn([_call(args="[1]")]), tools, 0)[0]
    assert "not declared" in call_problems(_turn([_call("rm_rf")]), tools, 0)[0]
    assert "expected 'tool_calls'" in call_problems(_turn([_call()], finish="stop"), tools, 0)[0]
    no_params = call_problems(_turn([_call("get_server_time", args='{"x": 1}')]), [T.SERVER_TIME], 0)
    assert "Additional properties" in no_params[0]
    assert call_problems(_turn([_call("get_server_time", args="{}")]), [T.SERVER_TIME], 0) == []


def test_streamed_calls_sharing_an_index_are_named_as_merged():
    turn = _turn([_call()], announced={0: ["get_weather", "get_time"]})
    problems = call_problems(turn, [T.GET_WEATHER, T.GET_TIME], 0)
    assert len(problems) == 1 and "index 0" in problems[0] and "merges" in problems[0]


def test_leaks_in_content_and_reasoning_are_each_named():
    section = "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{}"
    assert leak_problems(_turn(content="Sunny.", reasoning="Check it.")) == []
    assert "leaked into content" in leak_problems(_turn(content=section))[0]
    assert "inside reasoning_content" in leak_problems(_turn(reasoning="plan" + section))[0]
    tags = leak_problems(_turn(content="<think>x</think>Sunny", reasoning="a </think> b"))
    assert [p.split(" tag in ")[1].split(":")[0] for p in tags] == ["content", "reasoning_content"]


def test_an_empty_follow_up_is_named_with_its_known_causes():
    empty = empty_problems(_turn(finish="stop"))
    assert "empty message after the reasoning" in empty[0] and "Kimi-K2 issue 128" in empty[0]
    assert "25358" in empty[0]
    assert empty_problems(_turn(content="It is 18 C.", finish="stop")) == []
    assert empty_problems(_turn([_call()])) == []


def test_first_difference_points_at_the_path():
    doc = T.LONG_DOCUMENT
    assert first_difference(json.loads(json.dumps(doc)), doc) is None
    changed = json.loads(json.dumps(doc))
    changed["sections"][3]["body"] = "other"
    assert first_difference(changed, doc, "/document").startswith("/document/sections/3/body")
    assert "missing" in first_difference({}, doc)
    assert "items instead of" in first_difference({**doc, "sections": []}, doc)
    assert len(json.dumps(doc, ensure_ascii=False)) > 3000  # several KB


def test_the_client_sends_back_ids_and_arguments_unchanged_and_the_reasoning():
    turn = _turn([_call(idx=2)], content="", reasoning="Need the weather.")
    message = turn.assistant_message()
    assert message["reasoning_content"] == "Need the weather." and message["content"] is None
    assert message["tool_calls"][0]["id"] == "functions.get_weather:2"
    assert message["tool_calls"][0]["function"]["arguments"] == '{"location": "Paris"}'


def test_unknown_agentic_case_is_refused():
    with pytest.raises(ValueError, match="unknown agentic case"):
        invoke.run_agentic(_at("http://127.0.0.1:1"), invoke.InvokeOptions(checks=["multi_turn", "telepathy"]))


# ---------------------------------------------------------------- against the emulator


def _run(fault=None, names=None):
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, fault=fault))
    try:
        return invoke.run_all(_at(url), invoke.InvokeOptions(checks=names, **FAST))
    finally:
        stop()


def test_every_agentic_case_passes_on_the_emulator_and_records_what_it_saw(emulator_url, tmp_path, monkeypatch):
    results = invoke.run_agentic(_at(emulator_url), invoke.InvokeOptions(**FAST))
    by = {r.name: r for r in results}
    assert list(by) == AGENTIC
    assert all(r.status == "pass" for r in results), [(r.name, r.reason) for r in results if r.status != "pass"]
    assert all(r.suite == "agentic" and r.expected and r.observed for r in results)
    turns = by["multi_turn"].observed
    ids = [c["id"] for t in turns for c in t["tool_calls"]]
    assert ids == ["functions.get_weather:0", "functions.search_places:1", "functions.book_table:2"]
    assert json.loads(turns[2]["tool_calls"][0]["arguments"])["restaurant"] == T.RESTAURANT
    assert turns[-1]["tool_calls"] == [] and turns[-1]["content"]
    parallel = by["parallel_calls_stream"].observed[0]["tool_calls"]
    assert [c["id"] for c in parallel] == ["functions.get_weather:0", "functions.get_time:1"]
    long_stream = by["long_arguments_stream"]
    assert long_stream.details["argument_chars"] > 3000
    assert int(long_stream.observed[0]["argument_pieces"]["0"]) > 100
    assert by["truncated_call"].observed[0]["finish_reason"] == "length"
    assert by["truncated_call_stream"].details["partial_call_streamed"] is True  # as SGLang 0.5.23 streams it
    card = invoke.agentic_card(results)
    assert card["cases"] == len(AGENTIC) and card["passed"] == len(AGENTIC) and card["failures"] == []
    assert card["source"] == "emulated"
    saved = invoke.load((invoke.save(results, RunFolder(tmp_path))).parent)
    assert [r.observed for r in saved] == [r.observed for r in results]
    shown: list[str] = []  # the report's card for the suite (report/show.py)
    monkeypatch.setattr(show, "_show", lambda obj: shown.append(getattr(obj, "data", str(obj))))
    report.show_invoke(report.collect(RunFolder(tmp_path)))
    n = len(AGENTIC)
    assert any(f"Agentic tool calling (emulated): {n} of {n} cases passed" in h and "multi_turn" in h for h in shown)


FEATURE_TOOL = {"tool_call", "tool_call_stream", "image_tools"}
CALL_CASES = {
    "multi_turn",
    "multi_turn_stream",
    "parallel_calls",
    "parallel_calls_stream",
    "long_arguments",
    "long_arguments_stream",
    "tool_names",
    "no_parameters",
    "tool_choice_auto",
    "tool_choice_required",
    "tool_choice_named",
    "thinking_then_call",
    "instant_then_call",
}
LEAKS = {"leaks", "leaks_stream"}
TRUNCATED = {"truncated_call", "truncated_call_stream"}
FOLLOW_UPS = {"follow_up", "follow_up_stream"}

# fault -> (feature checks that fail, agentic cases that fail, words every failing agentic reason has)
FAULT_MATRIX = {
    "empty-after-think": (
        {"tool_result"},
        {"multi_turn", "multi_turn_stream", "parallel_calls", "parallel_calls_stream"} | FOLLOW_UPS,
        ["empty message after the reasoning", "Kimi-K2 issue 128"],
    ),
    "markers-in-content": (FEATURE_TOOL, CALL_CASES | LEAKS | TRUNCATED, ["markers", "leaked into content"]),
    "ids-restart": (set(), {"multi_turn", "multi_turn_stream"}, ["should be functions.", "issue 10600"]),
    "uuid-call-ids": (set(), CALL_CASES, ["not in SGLang's Kimi format functions.<name>:<idx>"]),
    "stream-args-cut": (set(), {"long_arguments_stream"}, ["do not reassemble", "issue 23363"]),
    "call-in-reasoning": (FEATURE_TOOL, (CALL_CASES - {"instant_then_call"}) | LEAKS, ["inside reasoning_content"]),
    "hyphen-names-dropped": (set(), {"tool_names"}, ["'geo-lookup_v2'", "lacks '-'"]),
    "parallel-index-reused": (set(), {"parallel_calls_stream"}, ["index 0", "merges them"]),
    "tool-choice-ignored": (set(), {"tool_choice_required", "tool_choice_none", "tool_choice_named"}, ["tool_choice"]),
    "truncated-call-kept": (set(), TRUNCATED, ["max_tokens=48 cut the call"]),
    # the two older content faults, for completeness
    "no-reasoning": (
        {"thinking", "thinking_stream"},
        set(AGENTIC) - TRUNCATED - {"instant_then_call"},
        ["<think> tag in content"],
    ),
    "bad-tool-json": (FEATURE_TOOL, CALL_CASES, ["not valid JSON"]),
}


def test_the_matrix_covers_every_new_fault_and_every_case_is_shown_to_catch_one():
    assert set(TOOL_FAULT_KINDS) <= set(FAULT_MATRIX)
    caught = set().union(*(agentic for _, agentic, _ in FAULT_MATRIX.values()))
    assert caught == set(AGENTIC)


@pytest.mark.parametrize("fault", list(FAULT_MATRIX))
def test_each_fault_fails_exactly_its_cases_with_a_reason_naming_it(fault):
    feature, agentic, words = FAULT_MATRIX[fault]
    results = _run(fault)
    failed = {r.name for r in results if r.status == "fail"}
    assert {n for n in failed if n in invoke.CHECKS} == feature
    assert {n for n in failed if n in invoke.AGENTIC_CASES} == agentic
    for r in results:
        if r.status == "fail" and r.suite == "agentic":
            assert all(w in r.reason for w in words), (r.name, r.reason)
    card = invoke.agentic_card(results)
    assert card["failed"] == len(agentic) and {f["case"] for f in card["failures"]} == agentic
