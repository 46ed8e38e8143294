"""Failures grouped by cause, one diagnosis when they share one (issue 25 item 11).

The case: llama.cpp serving a small model under Kimi's name, the h200 runbook run against it: the
invoke card was a wall of separate failures with no sentence saying what they add up to.
"""

from __future__ import annotations

from kimi_runbooks.invoke.results import CheckResult
from kimi_runbooks.report import causes


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
    from kimi_runbooks.rundir import RunFolder

    folder = RunFolder.create(tmp_path / "run")
    folder.save_json(folder.plan, make_plan({"platform": "h200"}).as_dict())
    folder.save_json(folder.runbook, {"stages": ["deploy", "invoke"]})
    folder.save_json(folder.invoke, {"results": [r.model_dump(mode="json") for r in _results()]})
    data = report.collect(folder.path)
    card = cards.invoke_card(data)
    assert card.count("not Kimi behind") == 1 and card.count("<li>") == 3
    steps = next_steps(data)
    assert sum("not Kimi behind" in s.what for s in steps) == 1
    assert not [s for s in steps if s.what.startswith(("invoke check thinking", "invoke check tool_call"))]
    assert json.loads((folder.path / "invoke.json").read_text())["results"]
