"""A failing report reads in a minute (issue 40 item 5).

The case, from the h200 runbook run against llama.cpp (an external server that is neither SGLang nor
Kimi): "What to do next" listed about 40 items, 27 of them "read server.log" for a run that has no
server.log; "no SGLang native API" appeared four times and not in the speed card; the headline led
with the first failed check; the accuracy card showed a schema accuracy on n=1 without saying that n
counts the tool calls the model made. The Kimi-K3 report listed every next step twice (the plan's
warnings, again from the manifest). A server killed mid-invoke in a rehearsal was headed by the
checks that failed before it died ("[likely cause: the model ...]"), not by the death.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks import report
from kimi_runbooks.invoke.results import CheckResult
from kimi_runbooks.invoke.stage import MODEL_CAUSE
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.report import cards, sections
from kimi_runbooks.report.next_steps import next_steps
from kimi_runbooks.rundir import RunFolder

NO_NATIVE = (
    "this server has no SGLang native API (POST /generate answered 404): scenarios with backend 'sglang' need it. "
    "Fix: run the chat-API scenarios (backend sglang-oai-chat, e.g. the openai-smoke set), or serve with SGLang"
)
MAX_STEPS = 8
"""What a reviewer reads in a minute (the issue's bound)."""
GONE = "could not reach the server at http://127.0.0.1:30000: ConnectError: [Errno 111] Connection refused"


def _llama_cpp_checks() -> list[CheckResult]:
    """What the llama.cpp run's invoke stage recorded: chat answers, nothing of Kimi's works."""
    fail = {
        "thinking": "reasoning_content is empty or missing although thinking is on by default",
        "thinking_stream": "reasoning_content is empty or missing although thinking is on by default",
        "tool_call": "no tool call came back (expected get_weather)",
        "tool_call_stream": "no tool call came back (expected get_weather)",
        "tool_result": "the answer does not use the tool result",
        "image": 'HTTP 500 from the server: can only concatenate str (not "list") to str',
        "image_tools": 'HTTP 500 from the server: can only concatenate str (not "list") to str',
        "structured_json_schema": "content is not JSON",
        "structured_json_schema_stream": "content is not JSON",
        "structured_json_object": "content is not JSON",
        "structured_json_object_stream": "content is not JSON",
        "required_after_result": "tool_choice required after a tool result, but no tool call came back",
        "named_after_result": "tool_choice named final_result after a tool result, but no tool call came back",
        "kvv_tool_schema": "schema 0: no kvv_walle_case call although tool_choice is required",
    }
    rows = [CheckResult(name=n, status="pass", reason="ok") for n in ("models", "chat", "instant", "concurrency")]
    rows += [CheckResult(name=n, status="fail", reason=r) for n, r in fail.items()]
    rows += [
        CheckResult(name=f"case_{i}", status="fail", reason="never called get_weather", suite="agentic")
        for i in range(17)
    ]
    rows += [CheckResult(name="image_url", status="skip", reason="no image_url given")]
    return rows


def _toolcall_rows(triggered: int, requests: int = 16, f1: float = 0.2) -> list[dict[str, Any]]:
    """The built-in tool-call eval's rows (metric names and n as toolcall_eval.summary_metrics writes)."""
    settings = {"reference_suite": "k2vv-toolcall", "published": False, "model": "smollm2-135m"}
    metrics = [
        ("success", requests, requests, "count"),
        ("tool_calls_triggered", triggered, requests, "count"),
        ("schema_valid", triggered, triggered, "count"),
        ("schema_accuracy", 1.0 if triggered else None, triggered, "rate"),
        ("tool_call_f1", f1, requests, "rate"),
    ]
    return [
        {"suite": "toolcall-builtin", "metric": m, "value": v, "n": n, "kind": k, "settings": settings}
        | {"source": "measured", "status": "ok", "emulated": False, "fingerprint": "f1"}
        for m, v, n, k in metrics
    ]


def _folder(tmp_path: Path, launcher: str, results: list[CheckResult], **plan: Any) -> RunFolder:
    folder = RunFolder.create(tmp_path / "run")
    folder.save_json(folder.plan, make_plan({"platform": "h200", **plan}).as_dict())
    folder.save_json(folder.runbook, {"launcher": launcher, "stages": ["deploy", "invoke", "speed", "accuracy"]})
    folder.save_json(folder.handle, {"launcher": launcher, "base_url": "http://127.0.0.1:30000", "model": "m"})
    folder.save_json(folder.invoke, {"results": [r.model_dump(mode="json") for r in results]})
    return folder


@pytest.fixture
def external_failing(tmp_path: Path) -> report.RunData:
    folder = _folder(tmp_path, "external", _llama_cpp_checks(), served_model_name="smollm2-135m")
    (folder.path / "server.log").write_text("")  # the external launcher may leave an empty one
    for scenario in ("smoke-random-ids-c1", "smoke-random-ids-c4"):
        row = {"scenario": scenario, "status": "skipped", "metrics": {}, "error": NO_NATIVE}
        folder.append_jsonl(folder.bench, row)
    folder.append_jsonl(folder.bench, {"scenario": "smoke-chat-random-ids-c4", "status": "ok", "metrics": {}})
    for row in _toolcall_rows(triggered=1):
        folder.append_jsonl(folder.accuracy, row)
    return report.collect(folder)


def _text(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html).replace("&#x27;", "'").replace("&quot;", '"')


def test_the_next_steps_are_few_once_each_and_name_no_log_the_run_has_not(external_failing) -> None:
    steps = next_steps(external_failing)
    lines = [f"{s.what} — {s.fix}" for s in steps]
    assert len(steps) <= MAX_STEPS, lines
    assert len(set(lines)) == len(lines)
    assert not [line for line in lines if "server.log" in line], lines  # the run started no server
    assert "server.log" not in cards.top(external_failing)
    # the causes: not SGLang, then not Kimi; their checks and scenarios are not listed one by one
    assert steps[0].what.startswith("the server is not SGLang") and "serve with SGLang" in steps[0].fix
    assert steps[1].what.startswith("no reasoning and no tool calls at all")
    assert not [s for s in steps if s.what.startswith(("invoke check thinking", "invoke check tool_call"))]
    structured = [s for s in steps if s.what.startswith("structured output: 4 invoke checks")]
    assert len(structured) == 1 and "xgrammar" in structured[0].fix
    assert sum("agentic cases" in s.what for s in steps) == 1


def test_the_headline_leads_with_the_diagnosis(external_failing) -> None:
    v = report.verdict(external_failing)
    assert v.headline.startswith("the server is not SGLang (POST /generate answered 404); ")
    assert v.level == "FAIL" and v.diagnosed
    assert v.headline.endswith("failure(s) in all")
    assert v.reasons[0].startswith("the server is not SGLang") and v.reasons[1].startswith("no reasoning")
    line = _text(cards.verdict_line(external_failing))
    assert "the server is not SGLang" in line and "invoke check" not in line


def test_not_sglang_is_said_once_in_the_speed_card_and_once_in_the_steps(external_failing) -> None:
    speed = _text(cards.speed_card(external_failing))
    assert speed.count("no SGLang native API") == 1
    assert "2 scenarios (smoke-random-ids-c1, smoke-random-ids-c4)" in speed and "Fix:" not in speed
    steps = " ".join(f"{s.what} {s.fix}" for s in next_steps(external_failing))
    assert steps.count("no SGLang native API") == 1
    assert _text(cards.top(external_failing)).count("no SGLang native API") == 2  # speed card, next steps
    table = sections.speed_section(external_failing)  # in full on its first scenario's row, then referred to
    assert "as for smoke-random-ids-c1" in table and table.count("no SGLang native API") <= 2


def test_accuracy_shows_the_primary_metric_with_what_its_n_counts(external_failing) -> None:
    card = _text(cards.accuracy_card(external_failing))
    assert "schema_accuracy 1.000" in card
    assert "on n=1 tool calls made (the model called a tool in 1 of 16 requests; published rate 0.485)" in card
    assert "tool_call_f1 0.200" in card and "on n=16 requests" in card
    assert "success" not in card
    table = sections.accuracy_section(external_failing)
    names = {"success", "tool_calls_triggered", "schema_valid", "schema_accuracy", "tool_call_f1"}
    cells = re.findall(r"<td class=\"l\">([\w ()]+)</td>", table)
    metrics = [c for c in cells if c.split(" ")[0] in names]
    assert metrics[:3] == ["schema_accuracy (primary)", "tool_call_f1 (primary)", "success"], metrics
    assert "1 tool calls made" in _text(table) and "16 requests" in _text(table)


def test_a_plan_warning_the_manifest_repeats_is_one_step(tmp_path) -> None:
    folder = _folder(tmp_path, "emulator", [CheckResult(name="chat", status="pass", reason="ok")])
    launch = make_plan({"platform": "b300", "model": "kimi-k3"}).as_dict()
    assert launch["warnings"], "the K3 plan on B300 has warnings (the case of the report)"
    folder.save_json(folder.plan, launch)
    folder.save_json(folder.manifest, {"launcher": "emulator", "emulated": True, "warnings": launch["warnings"]})
    data = report.collect(folder)
    whats = [s.what for s in next_steps(data)]
    assert len(whats) == len(set(whats)) == len(launch["warnings"]), whats
    assert [w.kind for w in report.warnings(data) if w.kind in ("plan", "deploy")] == ["plan"] * len(whats)


def _died_mid_invoke(tmp_path: Path, launcher: str, log: str) -> report.RunData:
    """A rehearsal whose server was killed after four checks: model-caused failures first, then none reach it."""
    results = [CheckResult(name="models", status="pass", reason="ok")]
    results += [
        CheckResult(name=n, status="fail", reason=f"reasoning_content is empty [{MODEL_CAUSE}]", rehearsal=True)
        for n in ("thinking", "thinking_stream")
    ]
    results += [CheckResult(name="instant", status="fail", reason=f"content is empty [{MODEL_CAUSE}]")]
    results += [
        CheckResult(name=n, status="fail", reason=GONE)
        for n in ("tool_call", "tool_call_stream", "tool_result", "image", "structured_json_schema", "concurrency")
    ]
    folder = _folder(tmp_path, launcher, results)
    (folder.path / "server.log").write_text(log)
    return report.collect(folder)


def test_a_server_that_died_mid_invoke_leads_the_verdict_and_the_steps(tmp_path) -> None:
    data = _died_mid_invoke(tmp_path, "sglang-cpu", "Killed\n")
    v = report.verdict(data)
    assert v.headline.startswith("the server stopped answering: 6 invoke checks (from tool_call on) could not reach")
    assert v.reasons[0].startswith("the server stopped answering") and "likely cause" not in v.reasons[0]
    steps = next_steps(data)
    assert steps[0].what.startswith("the server stopped answering")
    assert steps[0].fix.startswith("read server.log in the run folder for why it stopped")
    whats = " ".join(s.what for s in steps)
    assert sum("could not reach" in s.what for s in steps) == 1
    assert "invoke check tool_call" not in whats and "concurrency" not in whats  # said by the cause
    assert "reasoning" in whats and "instant" in whats  # the model-caused failures follow
    card = _text(cards.invoke_card(data))
    assert card.count("could not reach") == 1 and "the server stopped answering: 6 invoke checks" in card


def test_a_dead_external_server_is_not_sent_to_a_log_the_run_has_not(tmp_path) -> None:
    data = _died_mid_invoke(tmp_path, "external", "")
    steps = next_steps(data)
    assert steps[0].what.startswith("the server stopped answering")
    assert steps[0].fix.startswith("check the server at http://127.0.0.1:30000 is up")
    assert "server.log" not in json.dumps([s.__dict__ for s in steps])
