"""The per-parser output formats and model capabilities, without a server (the contract suite,
tests/contract/test_parser_formats.py, holds them to SGLang's own parsers)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import httpx
import pytest
import yaml

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.capabilities import ModelCapabilities, capabilities_for
from kimi_runbooks.emulator.cli import parse_settings
from kimi_runbooks.emulator.content import Reply, ToolCall
from kimi_runbooks.emulator.events import reply_events
from kimi_runbooks.emulator.formats import FORMATS, RawTurn, chat_format
from kimi_runbooks.emulator.raw import raw_chat_output
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.kimi.parsers import xtml_arguments
from kimi_runbooks.paths import REPO_ROOT
from tests.support.hybrid_models import k3_like

K3 = FORMATS["kimi_k3"]
CALL = ToolCall(0, "get_weather", json.dumps({"location": "Paris", "days": 3, "metric": True}))


def _turn(reply: Reply, cut: int | None = None, history: int = 0) -> RawTurn:
    events = reply_events(reply, thinking=True, leak_reasoning=False)
    if cut is not None:
        events = events[:cut]
    return RawTurn(events, reply.tool_calls, history, thinks=True, finished=cut is None)


def test_k3_raw_output_has_its_channels_one_piece_per_token():
    reply = Reply("I need the weather.", "Let me check.", [CALL])
    turn = _turn(reply)
    pieces = K3.render(turn)
    assert len(pieces) == len(turn.events)  # markers ride on tokens, token counts stay exact
    text = "".join(pieces)
    assert not text.startswith("<|open|>think")  # the prompt pre-fills the think channel
    assert text.startswith("I need the weather.<|close|>think<|sep|><|open|>response<|sep|>Let me check.")
    assert '<|open|>call tool="get_weather" index="1"<|sep|>' in text
    assert '<|open|>argument key="days" type="number"<|sep|>3<|close|>argument<|sep|>' in text
    assert text.endswith("<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>")


def test_a_k3_call_cut_by_max_tokens_never_closes():
    reply = Reply("Need it.", "", [CALL])
    full = _turn(reply)
    last_arg = max(i for i, e in enumerate(full.events) if e.kind == "tool_args")
    for cut in range(1, last_arg + 1):
        assert "<|close|>call<|sep|>" not in "".join(K3.render(_turn(reply, cut)))
    assert "".join(K3.render(_turn(reply, last_arg + 1))).endswith("<|close|>call<|sep|>")


def test_xtml_escapes_attributes_and_keeps_strings_raw():
    text = xtml_arguments({'a"b&c': 'x "y"', "n": None, "list": [1, "é"]})
    assert 'key="a&quot;b&amp;c" type="string"<|sep|>x "y"<|close|>argument' in text
    assert 'key="n" type="null"<|sep|>null' in text and 'type="array"<|sep|>[1, "é"]' in text


def test_call_ids_and_prompt_stub_follow_the_parser():
    assert FORMATS["kimi_k2"].tool_call_id("get_weather", 3, 1) == "functions.get_weather:4"
    assert K3.tool_call_id("get_weather", 3, 1) == "get_weather:4"
    assert K3.unreported_prompt_tokens == 3 and FORMATS["kimi_k2"].unreported_prompt_tokens == 0
    assert K3.thinking_leaks_in_stream(model_thinks=True, thinking_requested=False)
    assert not FORMATS["kimi_k2"].thinking_leaks_in_stream(model_thinks=True, thinking_requested=False)


def test_an_unknown_parser_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(ValueError, match="kimi_k2, kimi_k3"):
        chat_format("qwen25")
    with pytest.raises(SystemExit) as exc:
        parse_settings(["--tool-call-parser", "qwen25"])
    assert exc.value.code == 2 and "kimi_k2 or kimi_k3" in capsys.readouterr().err


def test_effort_levels_lengthen_reasoning_in_order_and_unknown_levels_use_the_default():
    caps = ModelCapabilities.from_model(k3_like())
    reply = Reply("Base reasoning.", "Answer.")
    lengths = {
        level: len(caps.with_effort(reply, level, random.Random(1)).reasoning)
        for level in ("low", "high", "max", "medium", None)
    }
    assert lengths["low"] < lengths["high"] < lengths["max"]
    assert lengths["medium"] == lengths[None] == lengths["max"]  # SGLang: the encoder default
    assert ModelCapabilities().with_effort(reply, "max", random.Random(1)) == reply  # no levels declared


def test_thinking_effort_in_template_kwargs_wins_over_reasoning_effort():
    from kimi_runbooks.emulator.protocol import ChatRequest

    base = {"messages": [{"role": "user", "content": "Hi"}]}
    assert ChatRequest.model_validate({**base, "reasoning_effort": "high"}).effort_requested == "high"
    both = {**base, "reasoning_effort": "high", "chat_template_kwargs": {"thinking_effort": "low"}}
    assert ChatRequest.model_validate(both).effort_requested == "low"


def test_the_cli_reads_capabilities_from_the_params_entry(tmp_path: Path):
    params = tmp_path / "params"
    shutil.copytree(REPO_ROOT / "params", params)
    data = k3_like().model_dump(mode="json", exclude_none=True)
    (params / "models" / "test-k3-like.yaml").write_text(yaml.safe_dump(data))
    caps = capabilities_for("test/Kimi-K3-like", None, params)
    assert caps.thinking == "always" and caps.effort_levels == ("low", "high", "max") and caps.video
    assert capabilities_for("someone/else", None, params) == ModelCapabilities()
    settings, _ = parse_settings(
        ["--model-path", "test/Kimi-K3-like", "--params-dir", str(params), "--tool-call-parser", "kimi_k3"]
    )
    assert settings.capabilities == caps and settings.chat_format is K3
    # no parser flags: the model's own (SGLang infers kimi_k3 from a KimiK3 architecture)
    settings, _ = parse_settings(["--model", "test-k3-like", "--params-dir", str(params)])
    assert settings.chat_format is K3 and settings.reasoning_parser == "kimi_k3" and settings.capabilities == caps
    settings, _ = parse_settings(["--params-dir", str(params)])  # the default Kimi-K2.6
    assert settings.chat_format is FORMATS["kimi_k2"] and settings.capabilities.thinking == "optional"


def test_reasoning_effort_none_turns_thinking_off_for_a_model_that_may_skip_it():
    """protocol.py normalize_reasoning_inputs: effort 'none' sets chat_template_kwargs thinking=false."""
    url, stop = run_in_thread(EmulatorSettings(time_scale=0.01, log_startup=False))
    try:
        body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 200}
        on = httpx.post(f"{url}/v1/chat/completions", json=body).json()
        off = httpx.post(f"{url}/v1/chat/completions", json={**body, "reasoning_effort": "none"}).json()
        bad = httpx.post(f"{url}/v1/chat/completions", json={**body, "reasoning_effort": True})
    finally:
        stop()
    assert on["choices"][0]["message"]["reasoning_content"]
    assert off["choices"][0]["message"]["reasoning_content"] is None
    assert bad.status_code == 400 and "reasoning_effort" in bad.text


def test_raw_output_matches_what_the_emulator_answers():
    model = k3_like()
    settings = EmulatorSettings(
        time_scale=0.01,
        log_startup=False,
        capabilities=ModelCapabilities.from_model(model),
        launch_args={"tool_call_parser": "kimi_k3", "reasoning_parser": "kimi_k3"},
    )
    body = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 300, "reasoning_effort": "low"}
    url, stop = run_in_thread(settings)
    try:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body).json()
    finally:
        stop()
    raw = raw_chat_output(settings, body)
    choice = raw["choices"][0]
    assert answer["usage"]["completion_tokens"] == len(choice["pieces"])
    assert answer["usage"]["reasoning_tokens"] == choice["reasoning_tokens"]
    assert answer["usage"]["prompt_tokens"] == raw["prompt_tokens"] - 3  # K3's generation stub
    text = "".join(choice["pieces"])
    reasoning = answer["choices"][0]["message"]["reasoning_content"]
    assert text.startswith(reasoning + "<|close|>think<|sep|>")


def test_emulated_text_names_no_one_models_parser():
    """A Kimi-K3 emulated reply once said reasoning is kept apart 'the way the kimi_k2 parser does
    it' (issue 40): the filler serves every model, so it names none."""
    from kimi_runbooks.emulator.content import filler_text

    text = " ".join(filler_text(random.Random(seed), 40) for seed in range(20))
    assert "reasoning parser" in text  # the sentence is still drawn
    assert "kimi_k2" not in text and "kimi_k3" not in text
