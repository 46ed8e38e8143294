"""Invoke-stage checks: their judging rules alone, then end to end against the emulator and its faults."""

from __future__ import annotations

import base64
import io
import json
import socket
import time
from types import SimpleNamespace as NS

import pytest
from PIL import Image

from kimi_runbooks import invoke
from kimi_runbooks.deploy import free_port
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread, start_subprocess
from kimi_runbooks.invoke import checks as invoke_checks
from kimi_runbooks.invoke import session as checks_session
from kimi_runbooks.invoke import stage as invoke_run
from kimi_runbooks.invoke.image import RECEIPT_ITEM, data_url, receipt_png
from kimi_runbooks.report.diagnoses import SERVER_GONE
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle, write_handle

MODEL = "moonshotai/Kimi-K2.6"
FAST = dict(timeout=20.0, max_tokens_thinking=4096, concurrency=3, parallel=1)


def _at(url: str) -> RunHandle:
    return invoke.resolve_target(base_url=url, model=MODEL)


# ---------------------------------------------------------------- judging rules, no server


def test_receipt_is_a_png_the_data_url_carries_intact():
    png = receipt_png()
    img = Image.open(io.BytesIO(png))
    assert img.format == "PNG" and img.width >= 400 and img.height >= 300
    url = data_url(png)
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == png


def _delta(content=None, reasoning=None, tool_calls=None):
    return NS(content=content, reasoning_content=reasoning, tool_calls=tool_calls)


def _tc(index, args, name=None, id=None):
    return NS(index=index, id=id, function=NS(name=name, arguments=args))


def test_stream_accumulates_interleaved_tool_calls_by_index():
    out = checks_session.StreamResult()
    deltas = [
        _delta(reasoning="Need two"),
        _delta(reasoning=" calls."),
        _delta(tool_calls=[_tc(0, "", "get_weather", "functions.get_weather:0")]),
        _delta(tool_calls=[_tc(1, "", "get_time", "functions.get_time:1")]),
        _delta(tool_calls=[_tc(0, '{"location": ')]),
        _delta(tool_calls=[_tc(1, '{"tz": "UTC"}')]),
        _delta(tool_calls=[_tc(0, '"Oslo"}')]),
        _delta(),
    ]
    flags = [checks_session.accumulate(out, d) for d in deltas]
    assert flags == [True] * 7 + [False]
    assert out.reasoning == "Need two calls."
    assert out.tool_calls[0] == {
        "id": "functions.get_weather:0",
        "name": "get_weather",
        "arguments": '{"location": "Oslo"}',
    }
    assert json.loads(out.tool_calls[1]["arguments"]) == {"tz": "UTC"}
    assert out.summary()["delta_order"] == ["reasoning x2", "tool_call x5"]


def _problems(calls, finish="tool_calls", **kw):
    rec = checks_session.Recorder(None)
    return invoke_checks._tool_problems(calls, finish, invoke.WEATHER_TOOL, rec, **kw)


def test_tool_rules_accept_a_good_call_and_name_each_fault():
    good = [{"name": "get_weather", "arguments": '{"location": "Paris", "unit": "celsius"}'}]
    assert _problems(good, must_mention={"location": "Paris"}) == []
    assert "finish_reason is 'stop'" in _problems(good, "stop")[0]
    assert "expected 'get_weather'" in _problems([{**good[0], "name": "get_time"}])[0]
    assert "not valid JSON" in _problems([{**good[0], "arguments": '{"location": "Paris",'}])[0]
    bad_enum = _problems([{**good[0], "arguments": '{"location": "Paris", "unit": "kelvin"}'}])
    assert len(bad_enum) == 1 and "schema" in bad_enum[0] and "unit" in bad_enum[0]
    missing = _problems([{**good[0], "arguments": '{"unit": "celsius"}'}])
    assert "'location' is a required property" in missing[0]
    assert (
        "does not mention 'Paris'"
        in _problems([{**good[0], "arguments": '{"location": "Rome"}'}], must_mention={"location": "Paris"})[0]
    )
    assert "no tool call came back" in _problems([], "stop")[-1]


def test_thinking_rules():
    assert invoke_checks._thinking_problems("Compare the tenths digit first.", "9.9 is bigger.") == []
    leaked = invoke_checks._thinking_problems(None, "<think>hmm</think>9.9 is bigger.")
    assert any("reasoning_content is empty" in p for p in leaked)
    assert any("<think> tags" in p for p in leaked)
    same = "Compare the tenths digit first, then answer."
    assert "not separate" in invoke_checks._thinking_problems(same, same + " 9.9.")[0]


def test_instant_mode_rules():
    assert invoke_checks._instant_problems(None, "9.9 is bigger.") == []
    assert invoke_checks._instant_problems("", "9.9 is bigger.") == []
    assert "although chat_template_kwargs.thinking=false" in invoke_checks._instant_problems("Let me think.", "9.9")[0]
    assert "<think> tags" in invoke_checks._instant_problems(None, "<think></think>9.9")[0]


def test_reasoning_must_stream_before_content():
    assert invoke_checks._order_problems(["reasoning", "reasoning", "content", "content"]) == []
    assert invoke_checks._order_problems(["content"]) == []
    assert "after content" in invoke_checks._order_problems(["reasoning", "content", "reasoning", "content"])[0]


def test_length_finish_points_at_max_tokens():
    problems = invoke_checks._text_problems("", "length", 512)
    assert problems[0] == "content is empty"
    assert "max_tokens=512" in problems[1] and "max_tokens_thinking" in problems[1]


def _session(emulated, expect=(RECEIPT_ITEM,)):
    handle = RunHandle(base_url="http://127.0.0.1:1", model=MODEL, launcher="external")
    return checks_session.Session(
        client=None,
        handle=handle,
        timeout=1,
        max_tokens=1,
        image_expect=list(expect),
        image_url=None,
        concurrency=0,
        emulated=emulated,
    )


def test_image_content_is_judged_only_against_a_real_model():
    status, reason = invoke_checks._image_content(_session(True), "A receipt listing a matcha latte.")
    assert status == "skip" and "emulator" in reason and RECEIPT_ITEM in reason
    assert invoke_checks._image_content(_session(False), "Two Matcha\nLatte drinks, total 12.25")[0] == "pass"
    status, reason = invoke_checks._image_content(_session(False), "A receipt from a bakery.")
    assert status == "fail" and "does not mention 'MATCHA LATTE'" in reason
    assert invoke_checks._image_content(_session(False, ["12.25", "scone"]), "1 scone; total 12.25")[0] == "pass"


def test_transcripts_elide_images_and_cut_long_text():
    url = data_url(receipt_png())
    out = checks_session.compact({"a": [{"image_url": {"url": url}}], "b": "x" * 10000})
    assert "base64 chars elided" in out["a"][0]["image_url"]["url"] and len(out["a"][0]["image_url"]["url"]) < 80
    assert len(out["b"]) < 4100 and out["b"].endswith("chars cut>")


def _result(name, status, **kw):
    return invoke.CheckResult(name=name, status=status, reason=f"{name} {status}", **kw)


def test_passed_semantics_table_save_load_and_redaction(tmp_path, monkeypatch):
    monkeypatch.setenv("PROBE_AUTH_VALUE", "zq-not-a-real-credential-77")
    results = [
        _result("chat", "pass", latency_ms=12.345, prompt_tokens=5, completion_tokens=7, emulated=True),
        _result("image_content", "skip", emulated=True),
        _result("tool_call", "fail", emulated=True, transcript=[{"request": {"note": "zq-not-a-real-credential-77"}}]),
    ]
    assert [r.passed for r in results] == [True, None, False]
    table = invoke.summary_table(results)
    assert list(table["status"]) == ["PASS", "SKIP", "FAIL"]
    assert set(table["source"]) == {"EMULATED"}
    assert table.loc[0, "latency_ms"] == 12.3 and table.loc[0, "completion_tokens"] == 7
    assert invoke.counts(results) == {"pass": 1, "fail": 1, "skip": 1}

    path = invoke.save(results, RunFolder(tmp_path), api_key_env="PROBE_AUTH_VALUE")
    text = path.read_text()
    assert "zq-not-a-real-credential-77" not in text and "<redacted>" in text
    doc = json.loads(text)
    assert doc["emulated"] is True and doc["source"] == "emulated" and doc["all_passed"] is False
    assert [r["passed"] for r in doc["results"]] == [True, None, False]
    assert [r.status for r in invoke.load(tmp_path)] == ["pass", "skip", "fail"]

    with pytest.raises(invoke.ChecksFailed, match="tool_call: tool_call fail"):
        invoke.raise_if_failed(results)
    invoke.raise_if_failed(results[:2])  # a skip is not a failure


def test_resolve_target_needs_a_server_and_names_the_fix(tmp_path):
    with pytest.raises(ValueError, match="without model"):
        invoke.resolve_target(base_url=f"http://127.0.0.1:{free_port()}")  # nothing there to ask
    with pytest.raises(ValueError, match="run_dir"):
        invoke.resolve_target()
    with pytest.raises(FileNotFoundError, match="deploy stage"):
        invoke.resolve_target(folder=RunFolder(tmp_path))
    write_handle(
        RunFolder.create(tmp_path),
        RunHandle(base_url="http://h:1", model=MODEL, launcher="emulator", emulated=True),
    )
    handle = invoke.resolve_target(folder=RunFolder(tmp_path), api_key_env="SOME_VAR")
    assert handle.emulated and handle.model == MODEL and handle.api_key_env == "SOME_VAR"


def test_unknown_check_name_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="unknown check"):
        invoke.run_all(_at("http://127.0.0.1:1"), invoke.InvokeOptions(checks=["chat", "vision"]))


# ---------------------------------------------------------------- against the emulator


def _statuses(results):
    return {r.name: r.status for r in results}


def test_checks_run_four_at_a_time_give_the_same_verdicts_in_the_same_order(emulator_url):
    serial = invoke.run_all(_at(emulator_url), invoke.InvokeOptions(**FAST))
    seen: list[str] = []
    together = invoke.run_all(
        _at(emulator_url), invoke.InvokeOptions(**{**FAST, "parallel": 4}), progress=lambda r: seen.append(r.name)
    )
    assert [(r.name, r.status) for r in together] == [(r.name, r.status) for r in serial]
    assert seen == [r.name for r in serial]  # progress is reported in order too


def test_every_check_passes_on_the_emulator(emulator_url):
    results = invoke.run_all(_at(emulator_url), invoke.InvokeOptions(**FAST))
    statuses = _statuses(results)
    assert [r.name for r in results if r.suite == "agentic"] == list(invoke.AGENTIC_CASES)  # after the features
    assert list(statuses)[: -len(invoke.AGENTIC_CASES)] == [
        "models",
        "chat",
        "thinking",
        "thinking_stream",
        "instant",
        "tool_call",
        "tool_call_stream",
        "tool_result",
        "image",
        "image_content",
        "image_url",
        "image_tools",
        *invoke.STRUCTURED_CHECKS,
        *invoke.KVV_CHECKS,
        "concurrency",
    ]
    skipped = {k for k, v in statuses.items() if v == "skip"}
    assert skipped == {"image_content", "image_url"}, statuses
    assert all(v == "pass" for k, v in statuses.items() if k not in skipped), [
        (r.name, r.reason) for r in results if r.status == "fail"
    ]
    by = {r.name: r for r in results}
    assert "emulator" in by["image_content"].reason and by["image_content"].passed is None
    assert all(r.emulated for r in results)  # detected from /server_info, the handle did not say so
    assert by["thinking_stream"].ttft_ms is not None and by["tool_call_stream"].ttft_ms is not None
    assert by["chat"].completion_tokens > 0 and by["image"].prompt_tokens > by["chat"].prompt_tokens
    stream = by["thinking_stream"].transcript[0]["response"]
    assert stream["delta_order"][0].startswith("reasoning") and stream["delta_order"][-1].startswith("content")
    assert by["tool_call"].details["tool_calls"][0]["id"] == "functions.get_weather:0"
    payload = data_url(receipt_png()).split(",", 1)[1]
    assert "base64 chars elided" in json.dumps(by["image"].transcript)
    assert payload[:200] not in json.dumps([r.model_dump() for r in results])
    assert len(by["concurrency"].transcript) == 3


@pytest.mark.parametrize(
    "fault, failing, words",
    [
        ("no-reasoning", {"thinking", "thinking_stream"}, ["reasoning_content is empty", "<think> tags"]),
        ("bad-tool-json", {"tool_call", "tool_call_stream", "image_tools"}, ["not valid JSON"]),
    ],
)
def test_faults_fail_exactly_the_matching_checks(fault, failing, words):
    """The feature checks (the agentic suite under these faults: test_agentic.py)."""
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, fault=fault))
    try:
        results = invoke.run_all(_at(url), invoke.InvokeOptions(checks=list(invoke.CHECKS), **FAST))
    finally:
        stop()
    statuses = _statuses(results)
    assert {k for k, v in statuses.items() if v == "fail"} == failing, statuses
    assert {k for k, v in statuses.items() if v == "skip"} == {"image_content", "image_url"}
    for r in results:
        if r.status == "fail":
            assert all(w in r.reason for w in words), r.reason


def test_image_content_fails_rather_than_passes_when_the_answer_misses_the_item(emulator_url):
    # Treat the emulator as a real model: its answer cannot name the item, so the check must fail.
    results = invoke.run_all(_at(emulator_url), invoke.InvokeOptions(checks=["image"], emulated=False, **FAST))
    assert _statuses(results) == {"image": "pass", "image_content": "fail"}
    assert "does not mention 'MATCHA LATTE'" in results[1].reason


def test_image_url_variant_runs_when_given(emulator_url):
    results = invoke.run_all(
        _at(emulator_url), invoke.InvokeOptions(checks=["image_url"], image_url="https://example.invalid/r.png", **FAST)
    )
    assert results[0].status == "pass"
    assert results[0].transcript[0]["request"]["messages"][0]["content"][0]["image_url"]["url"].startswith("https://")


def test_api_key_is_used_and_never_recorded(tmp_path, monkeypatch):
    key = "zq-probe-key-4411"
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, api_key=key))
    try:
        monkeypatch.setenv("PROBE_SERVER_AUTH", key)
        handle = RunHandle(base_url=url, model=MODEL, launcher="emulator", api_key_env="PROBE_SERVER_AUTH")
        good = invoke.run_all(handle, invoke.InvokeOptions(checks=["models", "chat"], **FAST))
        monkeypatch.setenv("PROBE_SERVER_AUTH", "zq-wrong-key-0000")
        bad = invoke.run_all(handle, invoke.InvokeOptions(checks=["models", "chat"], **FAST))
    finally:
        stop()
    assert _statuses(good) == {"models": "pass", "chat": "pass"}
    assert _statuses(bad) == {"models": "fail", "chat": "fail"}
    for r in bad:  # issue 14 item 6: the key's variable and the fix, not "pass model=" or a bare 401
        assert "HTTP 401" in r.reason and "the key in $PROBE_SERVER_AUTH was refused" in r.reason
        assert "Fix: export PROBE_SERVER_AUTH=" in r.reason and "pass model" not in r.reason
    text = invoke.save(good + bad, RunFolder(tmp_path), api_key_env="PROBE_SERVER_AUTH").read_text()
    assert key not in text


def test_timeouts_fail_each_check_and_the_next_still_runs():
    silent = socket.socket()  # accepts connections, never answers
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        start = time.monotonic()
        results = invoke.run_all(
            _at(f"http://127.0.0.1:{silent.getsockname()[1]}"),
            invoke.InvokeOptions(
                checks=["models", "chat", "tool_call_stream"], timeout=0.3, emulated=False, parallel=1
            ),
        )
        elapsed = time.monotonic() - start
    finally:
        silent.close()
    assert [r.name for r in results] == ["models", "chat", "tool_call_stream"]
    assert all(r.status == "fail" and "timed out after 0.3s" in r.reason for r in results)
    assert elapsed < 10
    assert results[1].transcript[0]["error"].startswith("timed out")


def test_server_dying_mid_stream_fails_that_check_and_later_ones_are_still_recorded():
    with start_subprocess(["--fault", "crash-mid-stream", "--time-scale", "0.01"]) as emu:
        results = invoke.run_all(
            _at(emu.base_url), invoke.InvokeOptions(checks=["models", "thinking_stream", "chat"], **FAST)
        )
    assert _statuses(results) == {"models": "pass", "thinking_stream": "fail", "chat": "fail"}
    assert "lost the connection" in results[1].reason
    # the next request meets a server that is going down: refused ("could not reach") or, while its
    # socket still accepts, reset ("lost the connection"); both read as "server gone" (report/diagnoses.py)
    assert SERVER_GONE.search(results[2].reason), results[2].reason


def test_an_auth_error_names_api_key_env_and_the_fix():
    """Issue 14 item 6, for a 401 on any request (describe_error), with and without a key variable."""
    import httpx
    from openai import AuthenticationError

    from kimi_runbooks.invoke.session import Session, describe_error

    response = httpx.Response(401, request=httpx.Request("POST", "http://h:1/v1/chat/completions"))
    exc = AuthenticationError('{"detail":"Invalid API key"}', response=response, body=None)

    def session(env):
        handle = RunHandle(base_url="http://h:1", model=MODEL, launcher="external", api_key_env=env)
        return Session(None, handle, 5, 16, [], None, 0, False)

    keyed = describe_error(exc, session("MY_SERVER_KEY"))
    assert keyed.startswith("HTTP 401 from the server: the key in $MY_SERVER_KEY was refused")
    assert keyed.endswith("Fix: export MY_SERVER_KEY=<the key the server was started with>")
    bare = describe_error(exc, session(None))
    assert "no API key was sent (api_key_env is not set)" in bare and "pass api_key_env='MY_KEY'" in bare


def test_without_a_key_every_check_fails_at_once_naming_api_key_env(tmp_path):
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, api_key="zq-k"))
    try:
        handle = RunHandle(base_url=url, model=MODEL, launcher="emulator")
        results = invoke.run_all(handle, invoke.InvokeOptions(checks=["models", "chat", "tool_call"], **FAST))
    finally:
        stop()
    assert _statuses(results) == {"models": "fail", "chat": "fail", "tool_call": "fail"}
    for r in results:
        assert r.reason.startswith("not sent: auth: HTTP 401 from GET /v1/models: no API key was sent")
        assert "api_key_env='MY_KEY'" in r.reason and not r.transcript


def test_side_by_side_the_slow_checks_are_sent_first_and_the_rest_keep_their_order():
    names = ["models", "chat", "kvv_params", "tool_call", "long_arguments", "long_context"]
    assert invoke_run.submission_order(names) == [
        "kvv_params",
        "long_arguments",
        "long_context",
        "models",
        "chat",
        "tool_call",
    ]
    assert set(invoke_run.SLOW_CHECKS) <= set(invoke_run.ALL_NAMES)  # no stale name
