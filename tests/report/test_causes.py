"""Failures grouped by cause, one diagnosis when they share one (issue 25 item 11).

The case: llama.cpp serving a small model under Kimi's name, the h200 runbook run against it: the
invoke card was a wall of separate failures with no sentence saying what they add up to.
"""

from __future__ import annotations

from kimi_runbooks.invoke.results import CheckResult
from kimi_runbooks.report import causes
from kimi_runbooks.rundir import RunFolder


def _results(thinking: str = "fail", tools: str = "fail", agentic: int = 20) -> list[CheckResult]:
    rows = [
        CheckResult(name="models", status="pass", reason="ok"),
        CheckResult(name="chat", status="pass", reason="ok"),
    ]
    rows += [
        CheckResult(name=n, status=thinking, reason="no reasoning_content in the answer")
        for n in ("thinking", "thinking_stream")
    ]
    rows += [
        CheckResult(name=n, status=tools, reason="finish_reason 'stop', no tool_calls")
        for n in ("tool_call", "tool_call_stream", "tool_result", "image_tools")
    ]
    rows += [CheckResult(name="instant", status="pass", reason="ok")]
    rows += [
        CheckResult(name=f"agentic-{i}", status="fail", reason="no tool call in turn 1", suite="agentic")
        for i in range(agentic)
    ]
    return rows


def test_no_reasoning_and_no_tool_calls_read_as_one_cause() -> None:
    results = _results()
    assert causes.diagnosis(results) == causes.NOT_KIMI
    found = causes.groups(results)
    assert [g.cause for g in found] == ["reasoning", "tool calls", "agentic cases"]
    assert len(found[1].names) == 4 and len(found[2].names) == 20


def test_a_single_family_failing_is_no_such_diagnosis() -> None:
    assert causes.diagnosis(_results(thinking="pass")) is None
    assert causes.diagnosis(_results(tools="pass")) is None
    broken_chat = [r if r.name != "chat" else CheckResult(name="chat", status="fail", reason="500") for r in _results()]
    assert causes.diagnosis(broken_chat) is None  # nothing answers: a different cause


def test_the_card_and_next_steps_say_it_once(tmp_path) -> None:
    import json

    from kimi_runbooks import report
    from kimi_runbooks.plan import plan as make_plan
    from kimi_runbooks.report import cards
    from kimi_runbooks.report.next_steps import next_steps

    folder = RunFolder.create(tmp_path / "run")
    folder.save_json(folder.plan, make_plan({"platform": "h200"}).as_dict())
    folder.save_json(folder.runbook, {"stages": ["deploy", "invoke"]})
    folder.save_json(folder.invoke, {"results": [r.model_dump(mode="json") for r in _results()]})
    data = report.collect(folder)
    card = cards.invoke_card(data)
    assert card.count("not Kimi behind") == 1 and card.count("<li>") == 3
    steps = next_steps(data)
    assert sum("not Kimi behind" in s.what for s in steps) == 1
    assert not [s for s in steps if s.what.startswith(("invoke check thinking", "invoke check tool_call"))]
    assert json.loads((folder.path / "invoke.json").read_text())["results"]


def _speed_and_accuracy_failures(tmp_path):  # type: ignore[no-untyped-def]
    """A run against a server without SGLang's /generate: three native-API scenarios die in
    bench_serving's warm-up with the same error (ports and request ids differ), one scenario with
    another cause; two accuracy suites fail to connect alike, one with a different error."""
    from kimi_runbooks import report
    from kimi_runbooks.plan import plan as make_plan

    folder = RunFolder.create(tmp_path / "run")
    folder.save_json(folder.plan, make_plan({"platform": "h200"}).as_dict())
    folder.save_json(folder.runbook, {"stages": ["deploy", "speed", "accuracy"]})
    for i, scenario in enumerate(("smoke-c1", "smoke-c4", "smoke-long")):
        folder.append_jsonl(
            folder.bench,
            {
                "scenario": scenario,
                "status": "failed",
                "metrics": {},
                "error": f"Initial test run failed - Please make sure benchmark arguments are correctly "
                f"specified. Error: Not Found (http://127.0.0.1:{31000 + i}/generate, request {i:08x}ab12cd34)\n"
                f"Traceback line {i}",
            },
        )
    folder.append_jsonl(
        folder.bench, {"scenario": "decode-c16", "status": "failed", "metrics": {}, "error": "timed out after 600 s"}
    )
    for suite in ("aime25", "gpqa"):
        folder.append_jsonl(
            folder.accuracy,
            {
                "suite": suite,
                "metric": "pass@1",
                "status": "error",
                "detail": f"ConnectionError: 127.0.0.1:{len(suite) + 40000} refused",
            },
        )
    folder.append_jsonl(
        folder.accuracy, {"suite": "toolcall-builtin", "metric": "f1", "status": "error", "detail": "KeyError: 'tools'"}
    )
    return report.collect(folder)


def test_cause_key_makes_numbers_and_ids_alike() -> None:
    a = causes.cause_key("Error: Not Found (http://127.0.0.1:31000/generate, request 0000000aab12cd34)\nmore")
    b = causes.cause_key("Error: Not Found (http://127.0.0.1:31002/generate, request 00000002ab12cd34)")
    assert a == b and a != causes.cause_key("Error: Bad Request (http://127.0.0.1:31000/generate)")


def test_speed_and_accuracy_failures_sharing_a_cause_are_shown_once(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kimi_runbooks.report import cards
    from kimi_runbooks.report.next_steps import next_steps

    data = _speed_and_accuracy_failures(tmp_path)
    speed = causes.speed_failures(data.speed)
    assert [g.names for g in speed] == [["smoke-c1", "smoke-c4", "smoke-long"], ["decode-c16"]]
    card = cards.speed_card(data)
    assert card.count("Not Found") == 1 and "3 scenarios (smoke-c1, smoke-c4, smoke-long)" in card
    assert "decode-c16" in card and "timed out" in card

    accuracy = causes.accuracy_failures(data.accuracy)
    assert [g.names for g in accuracy] == [["aime25", "gpqa"], ["toolcall-builtin"]]
    card = cards.accuracy_card(data)
    assert card.count("ConnectionError") == 1 and "2 suites (aime25, gpqa)" in card and "KeyError" in card

    steps = [s.what for s in next_steps(data)]
    assert sum("Not Found" in s for s in steps) == 1, steps  # once, not per scenario
    assert [s for s in steps if "speed scenario" in s] == [
        s for s in steps if s.startswith(("3 speed scenarios", "speed scenario decode-c16"))
    ]
    assert sum("ConnectionError" in s or "accuracy suite" in s and "errored" in s for s in steps) == 2, steps
