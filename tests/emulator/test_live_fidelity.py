"""What the live differential suite (tests/contract/test_live_differential.py) found the emulator doing
differently from a real SGLang 0.5.23 server, held here without one: grammar refusals, patterns and
unique enum arrays, continuous usage, weight-version spans, /generate meta_info, CORS, the tools the
chat template renders, /server_info's start-up breakdown and the metrics the speed stage reads."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import jsonschema
import pytest

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.grammar import grammar_failure
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.emulator.toolargs import Hints, arguments_for, instance_for

MODEL = "moonshotai/Kimi-K2.6"
HELLO = [{"role": "user", "content": "Say hello."}]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
TIME = {
    "type": "function",
    "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}},
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    base, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, max_model_len=8192))
    yield base
    stop()


def post(url: str, path: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=30)


def schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


# ---------------------------------------------------------------- json_schema refusals


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"type": "strin"}, 'Unsupported type "strin"'),
        ({"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True}, "uniqueItems would be ignored"),
        ({"type": "string", "pattern": "^a+$", "maxLength": 3}, "pattern, minLength/maxLength cannot be enforced"),
        ({"type": "string", "format": "color"}, "string format 'color' is not implemented"),
        ({"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 2}}}, "#/properties/n"),
    ],
)
def test_schemas_xgrammar_cannot_compile_are_refused(url: str, schema: dict[str, Any], words: str) -> None:
    resp = post(
        url, "/v1/chat/completions", {"model": MODEL, "messages": HELLO, "response_format": schema_format(schema)}
    )
    assert resp.status_code == 400, resp.text
    body = resp.json()
    assert body["type"] == "BadRequestError" and body["message"].startswith("Failed to compile json grammar: ")
    assert words in body["message"]


def test_a_compilable_schema_is_no_failure() -> None:
    assert (
        grammar_failure({"type": "object", "properties": {"a": {"type": ["string", "null"], "pattern": "x"}}}) is None
    )


def test_a_streamed_refusal_is_one_error_event_then_done(url: str) -> None:
    body = {"model": MODEL, "messages": HELLO, "stream": True, "response_format": schema_format({"type": "strin"})}
    resp = post(url, "/v1/chat/completions", body)
    assert resp.status_code == 200
    events = [block for block in resp.text.split("\n\n") if block]
    assert events[-1] == "data: [DONE]" and len(events) == 2
    error = json.loads(events[0].removeprefix("data: "))["error"]
    assert (
        error["type"] == "BAD_REQUEST" and error["code"] == 400 and "Failed to compile json grammar" in error["message"]
    )


def test_completions_and_generate_refuse_the_schema_too(url: str) -> None:
    resp = post(
        url, "/v1/completions", {"model": MODEL, "prompt": "Hi", "response_format": schema_format({"type": "strin"})}
    )
    assert resp.status_code == 400 and resp.json()["message"].startswith("Failed to compile json grammar")
    generate = {"text": "Hi", "sampling_params": {"max_new_tokens": 4, "json_schema": '{"type": "strin"}'}}
    resp = post(url, "/generate", generate)
    assert resp.status_code == 400 and resp.json()["error"]["message"].startswith("Failed to compile json grammar")
    resp = post(url, "/generate", {**generate, "stream": True})  # aborted after its first token
    outputs = [json.loads(b.removeprefix("data: ")) for b in resp.text.split("\n\n") if b and b != "data: [DONE]"]
    assert len(outputs) == 1 and outputs[0]["meta_info"]["completion_tokens"] == 1
    assert outputs[0]["meta_info"]["finish_reason"]["type"] == "abort"
    assert outputs[0]["meta_info"]["finish_reason"]["status_code"] == 400


# ---------------------------------------------------------------- values the schema allows


def test_pattern_strings_match_as_a_whole() -> None:
    schema = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
            "day": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
            "mail": {"type": "string", "pattern": r"^[a-z]+@[a-z]+\.(com|org)$"},
        },
        "required": ["code", "day", "mail"],
    }
    for value in (instance_for(schema, Hints(text="hello")), arguments_for(schema, Hints(text="hello"))):
        jsonschema.validate(value, schema)
        assert value["code"] == "AAA-00"


def test_unique_enum_arrays_stay_inside_the_enum() -> None:
    schema = {
        "type": "object",
        "properties": {
            "units": {
                "type": "array",
                "items": {"enum": ["celsius", "kelvin", "fahrenheit"]},
                "uniqueItems": True,
                "minItems": 3,
            },
            "small": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1, "maximum": 2},
                "uniqueItems": True,
                "minItems": 2,
            },
        },
        "required": ["units", "small"],
    }
    value = arguments_for(schema, Hints(text="temperature in celsius"))
    jsonschema.validate(value, schema)
    assert sorted(value["units"]) == ["celsius", "fahrenheit", "kelvin"]


def test_structured_output_with_a_pattern_validates(url: str) -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string", "pattern": "^[a-f0-9]{8}$"}},
        "required": ["id"],
    }
    resp = post(
        url, "/v1/chat/completions", {"model": MODEL, "messages": HELLO, "response_format": schema_format(schema)}
    )
    jsonschema.validate(json.loads(resp.json()["choices"][0]["message"]["content"]), schema)


# ---------------------------------------------------------------- answer shapes


def test_continuous_usage_stats_puts_usage_on_every_text_chunk(url: str) -> None:
    options = {"include_usage": True, "continuous_usage_stats": True}
    resp = post(
        url, "/v1/chat/completions", {"model": MODEL, "messages": HELLO, "stream": True, "stream_options": options}
    )
    chunks = [json.loads(b.removeprefix("data: ")) for b in resp.text.split("\n\n") if b and b != "data: [DONE]"]
    text = [
        c
        for c in chunks
        if c["choices"]
        and (c["choices"][0]["delta"].get("reasoning_content") or c["choices"][0]["delta"].get("content"))
    ]
    assert text and all(c.get("usage") for c in text)
    assert [c["usage"]["completion_tokens"] for c in text] == sorted(c["usage"]["completion_tokens"] for c in text)
    assert text[0]["usage"]["completion_tokens_details"] == {"reasoning_tokens": text[0]["usage"]["reasoning_tokens"]}
    role = chunks[0]
    assert role["choices"][0]["delta"]["role"] == "assistant" and "usage" not in role


def test_whole_answers_carry_the_weight_version_spans(url: str) -> None:
    chat = post(url, "/v1/chat/completions", {"model": MODEL, "messages": HELLO, "max_tokens": 5}).json()
    assert chat["metadata"] == {
        "weight_version": "default",
        "weight_versions": [{"version": "default", "start": 0, "end": 5}],
    }
    done = post(url, "/v1/completions", {"model": MODEL, "prompt": "Hi", "max_tokens": 3}).json()
    assert done["metadata"]["weight_versions"] == [{"version": "default", "start": 0, "end": 3}]


def test_generate_meta_info_has_the_time_stats_of_a_metrics_server(url: str) -> None:
    meta = post(url, "/generate", {"text": "Hi", "sampling_params": {"max_new_tokens": 3}}).json()["meta_info"]
    for key in (
        "forward_entry_time",
        "prefill_finished_time",
        "queue_time",
        "request_received_ts",
        "first_token_latency",
        "api_server_dispatch_finish_ts",
        "request_finished_ts",
        "response_sent_to_client_ts",
        "e2e_latency",
    ):
        assert isinstance(meta[key], float), key  # fmt: skip
    assert meta["weight_versions"] == [{"version": "default", "start": 0, "end": 3}]
    assert meta["cached_tokens_details"] is None and meta["dp_rank"] is None
    resp = post(url, "/generate", {"text": "Hi", "stream": True, "sampling_params": {"max_new_tokens": 3}})
    outputs = [json.loads(b.removeprefix("data: ")) for b in resp.text.split("\n\n") if b and b != "data: [DONE]"]
    assert "response_sent_to_client_ts" in outputs[0]["meta_info"] and "weight_versions" not in outputs[0]["meta_info"]
    assert "weight_versions" in outputs[-1]["meta_info"]


def test_answers_carry_cors_vary(url: str) -> None:
    assert httpx.get(url + "/v1/models", timeout=10).headers.get("vary") == "Origin"


# ---------------------------------------------------------------- the prompt the template gets


def _prompt_tokens(url: str, **extra: Any) -> int:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Weather?"}], "max_tokens": 1, **extra}
    return int(post(url, "/v1/chat/completions", body).json()["usage"]["prompt_tokens"])


def test_tool_choice_none_renders_no_tools_and_a_named_choice_only_its_tool(url: str) -> None:
    plain = _prompt_tokens(url)
    assert _prompt_tokens(url, tools=[WEATHER, TIME], tool_choice="none") == plain
    named = {"type": "function", "function": {"name": "get_time"}}
    assert _prompt_tokens(url, tools=[WEATHER, TIME], tool_choice=named) == _prompt_tokens(url, tools=[TIME])
    assert _prompt_tokens(url, tools=[WEATHER, TIME]) > _prompt_tokens(url, tools=[TIME]) > plain


# ---------------------------------------------------------------- what the server says about itself


def test_server_info_startup_time_is_a_breakdown(url: str) -> None:
    info = httpx.get(url + "/server_info", timeout=10).json()
    assert set(info["startup_time"]) == {
        "load_weight",
        "kv_cache_allocation",
        "scheduler_e2e",
        "cuda_graph",
        "tokenizer_e2e",
    }
    state = info["internal_states"][0]
    assert "tokenizer_e2e" not in state["startup_time"] and isinstance(state["decode_cuda_graph_bs"], list)
    assert isinstance(state["decode_cuda_graph_memory_gb"], float)


def test_metrics_have_the_gauges_the_speed_stage_reads(url: str) -> None:
    text = httpx.get(url + "/metrics", timeout=10).text
    for name in ("sglang:max_total_num_tokens{", "sglang:spec_accept_length{", "sglang:num_retracted_reqs{"):
        assert name in text, name
    retracted = next(line for line in text.splitlines() if line.startswith("sglang:num_retracted_reqs{"))
    assert 'pid="' in retracted
