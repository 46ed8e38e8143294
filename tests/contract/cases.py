"""The contract suite's request table: what is sent to the emulator and, replayed, to SGLang's own code.

Each case names the surface it checks (the rows of the closing table in issue 12), the
emulator variant it runs against (``default`` or ``auth``, the latter started with an API
key) and the raw HTTP request. Bodies are given as JSON-able objects, or as raw text when the
point is a broken body. Imported by the main-venv side only (capture + pytest); the bench-env
checker reads the captured file, never this module.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from kimi_runbooks.invoke.agentic_tools import function_tool

MODEL = "moonshotai/Kimi-K2.6"
API_KEY = "contract-suite-key"  # test-only key for the ``auth`` variant
CONTEXT_LENGTH = 262144

WEATHER_TOOL = function_tool(
    "get_weather",
    "Get the current weather for a city",
    {
        "location": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["location"],
)
TIME_TOOL = function_tool("get_time", "Get the local time in a city", {"city": {"type": "string"}}, ["city"])


def called(index: int, name: str, **arguments: Any) -> dict[str, Any]:
    """One tool call as SGLang's Kimi path names it (`functions.<name>:<index>`)."""
    return {
        "id": f"functions.{name}:{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def assistant_calls(*calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    """An assistant turn that made `calls`."""
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool_result(call: dict[str, Any], **result: Any) -> dict[str, Any]:
    """The tool's answer to `call`."""
    return {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}


USER_HELLO: list[dict[str, Any]] = [{"role": "user", "content": "Say hello to the contract suite."}]
USER_WEATHER: list[dict[str, Any]] = [{"role": "user", "content": "What's the weather in Beijing right now?"}]
# A conversation that already holds three tool calls: SGLang's Kimi path numbers the next
# call after them (serving_chat.py _get_history_tool_calls_cnt + _process_tool_call_id).
PARIS_WEATHER, PARIS_TIME, LYON_WEATHER = (
    called(0, "get_weather", location="Paris"),
    called(1, "get_time", city="Paris"),
    called(2, "get_weather", location="Lyon"),
)
HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "What's the weather and the time in Paris?"},
    assistant_calls(PARIS_WEATHER, PARIS_TIME),
    tool_result(PARIS_WEATHER, temp_c=21),
    tool_result(PARIS_TIME, time="14:05"),
    assistant_calls(LYON_WEATHER, content="It is 21 C and 14:05 in Paris."),
    tool_result(LYON_WEATHER, temp_c=19),
    {"role": "user", "content": "And what's the weather in Beijing?"},
]
BEIJING_WEATHER = called(0, "get_weather", location="Beijing")
TOOL_RESULT_TURN: list[dict[str, Any]] = [
    *USER_WEATHER,
    assistant_calls(BEIJING_WEATHER),
    tool_result(BEIJING_WEATHER, temp_c=30),
]

# Agentic shapes (issue 17): parallel calls in one turn, the next call of a chain after a result,
# a hyphenated tool name, a long nested argument document, tool_choice required/named/none.
USER_PARALLEL: list[dict[str, Any]] = [
    {"role": "user", "content": "At the same time, get the weather and the local time in Paris."}
]
CHAIN_AFTER_RESULT: list[dict[str, Any]] = [
    {"role": "user", "content": "First get the weather in Paris, then get the local time in Paris."},
    assistant_calls(PARIS_WEATHER),
    tool_result(PARIS_WEATHER, temp_c=21),
]
HYPHEN_TOOL = function_tool(
    "geo-lookup_v2", "Look up the coordinates of a city", {"city": {"type": "string"}}, ["city"]
)
SAVE_TOOL = function_tool(
    "save_document",
    "Save a JSON document to a file",
    {"path": {"type": "string"}, "document": {"type": "object"}},
    ["path", "document"],
)
LONG_DOCUMENT = {
    "title": 'Réunion "Q3" — notes',
    "items": [{"id": i, "text": f"point {i}: naïve café \\ {{braces}} ✓", "tags": ["a", "b"]} for i in range(30)],
    "meta": {"nested": {"deeper": {"ok": True, "ratio": 0.25}}},
}
USER_SAVE: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": "Call save_document to store this at notes/q3.json:\n```json\n"
        + json.dumps(LONG_DOCUMENT, ensure_ascii=False)
        + "\n```",
    }
]


# Structured output (issue 27): a schema as pydantic writes it ($defs/$ref, Optional, enum, nested list).
ANSWER_SCHEMA: dict[str, Any] = {
    "$defs": {
        "City": {
            "properties": {
                "name": {"title": "Name", "type": "string"},
                "population": {"title": "Population", "type": "integer"},
                "kind": {"$ref": "#/$defs/Kind"},
            },
            "required": ["name", "population", "kind"],
            "title": "City",
            "type": "object",
            "additionalProperties": False,
        },
        "Kind": {"enum": ["capital", "town"], "title": "Kind", "type": "string"},
    },
    "properties": {
        "cities": {"items": {"$ref": "#/$defs/City"}, "title": "Cities", "type": "array"},
        "capital": {"anyOf": [{"$ref": "#/$defs/City"}, {"type": "null"}], "default": None},
        "note": {"title": "Note", "type": "string"},
    },
    "required": ["cities", "capital", "note"],
    "title": "Answer",
    "type": "object",
    "additionalProperties": False,
}
USER_CITIES: list[dict[str, Any]] = [{"role": "user", "content": "Name two cities in France as JSON."}]


def _json_schema(strict: bool | None = True, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": "Answer", "schema": ANSWER_SCHEMA}
    if strict is not None:
        spec["strict"] = strict
    return {"type": "json_schema", "json_schema": spec, **extra}


@dataclass(frozen=True)
class Case:
    id: str
    surface: str
    method: str
    path: str
    body: Any = None  # JSON-able object, or str sent verbatim
    headers: dict[str, str] = field(default_factory=dict)
    variant: str = "default"  # "default" | "auth"

    def content(self) -> bytes | None:
        if self.body is None:
            return None
        return self.body.encode() if isinstance(self.body, str) else json.dumps(self.body).encode()

    def request_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.body is not None:
            headers.setdefault("content-type", "application/json")
        return headers


def _chat(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": USER_HELLO, "max_tokens": 400, **extra}


def _tools(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": messages, "tools": [WEATHER_TOOL, TIME_TOOL], "max_tokens": 400} | extra


USAGE = {"stream_options": {"include_usage": True}}

CASES: list[Case] = [
    # ---- /v1/chat/completions, whole responses
    Case("chat-basic", "chat", "POST", "/v1/chat/completions", _chat()),
    Case("chat-unknown-model", "chat", "POST", "/v1/chat/completions", _chat(model="gpt-4o")),
    Case("chat-missing-model", "chat", "POST", "/v1/chat/completions", {"messages": USER_HELLO, "max_tokens": 400}),
    Case("chat-thinking-off", "chat", "POST", "/v1/chat/completions", _chat(chat_template_kwargs={"thinking": False})),
    Case("chat-length", "chat", "POST", "/v1/chat/completions", _chat(max_tokens=5)),
    Case("chat-n2", "chat", "POST", "/v1/chat/completions", _chat(n=2)),
    Case("chat-tool-call", "chat", "POST", "/v1/chat/completions", _tools(USER_WEATHER)),
    Case("chat-tool-call-history", "chat", "POST", "/v1/chat/completions", _tools(HISTORY)),
    Case("chat-tool-result", "chat", "POST", "/v1/chat/completions", _tools(TOOL_RESULT_TURN)),
    Case("chat-parallel-calls", "chat", "POST", "/v1/chat/completions", _tools(USER_PARALLEL)),
    Case("chat-chain-next-call", "chat", "POST", "/v1/chat/completions", _tools(CHAIN_AFTER_RESULT)),
    Case(
        "chat-hyphen-name",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(USER_HELLO, tools=[HYPHEN_TOOL], tool_choice="required"),
    ),
    Case(
        "chat-tool-choice-named",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(USER_WEATHER, tool_choice={"type": "function", "function": {"name": "get_time"}}),
    ),
    Case("chat-tool-choice-none", "chat", "POST", "/v1/chat/completions", _tools(USER_WEATHER, tool_choice="none")),
    Case(
        "chat-long-arguments",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(USER_SAVE, tools=[SAVE_TOOL], max_tokens=4000),
    ),
    Case(
        "chat-long-arguments-cut",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(USER_SAVE, tools=[SAVE_TOOL], max_tokens=120, chat_template_kwargs={"thinking": False}),
    ),
    Case(
        "chat-json-schema-strict",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(messages=USER_CITIES, response_format=_json_schema(True)),
    ),
    Case(
        "chat-json-schema-loose",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(messages=USER_CITIES, response_format=_json_schema(None)),
    ),
    Case(
        "chat-json-schema-bare",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(messages=USER_CITIES, response_format={"type": "json_schema", "schema": ANSWER_SCHEMA}),
    ),
    Case(
        "chat-json-schema-thinking-off",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(messages=USER_CITIES, response_format=_json_schema(False), chat_template_kwargs={"thinking": False}),
    ),
    Case(
        "chat-json-object",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(messages=USER_CITIES, response_format={"type": "json_object"}),
    ),
    Case("chat-format-text", "chat", "POST", "/v1/chat/completions", _chat(response_format={"type": "text"})),
    Case(
        "chat-json-schema-with-tools",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(USER_WEATHER, response_format={"type": "json_object"}),
    ),
    Case(
        "chat-structural-tag",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(
            response_format={
                "type": "structural_tag",
                "format": {
                    "type": "tag",
                    "begin": "<answer>",
                    "content": {
                        "type": "json_schema",
                        "json_schema": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
                    },
                    "end": "</answer>",
                },
            }
        ),
    ),
    Case(
        "chat-structural-tag-legacy",
        "chat",
        "POST",
        "/v1/chat/completions",
        _chat(
            response_format={
                "type": "structural_tag",
                "structures": [{"begin": "<r>", "schema": {"type": "object"}, "end": "</r>"}],
                "triggers": ["<r>"],
                "at_least_one": True,
            }
        ),
    ),
    Case(
        "chat-required-after-result",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(TOOL_RESULT_TURN, tool_choice="required"),
    ),
    Case(
        "chat-named-after-result",
        "chat",
        "POST",
        "/v1/chat/completions",
        _tools(TOOL_RESULT_TURN, tool_choice={"type": "function", "function": {"name": "get_time"}}),
    ),
    Case(
        "chat-required-first-turn", "chat", "POST", "/v1/chat/completions", _tools(USER_WEATHER, tool_choice="required")
    ),
    # ---- /v1/chat/completions, streamed
    Case("chat-stream", "chat-stream", "POST", "/v1/chat/completions", _chat(stream=True)),
    Case("chat-stream-usage", "chat-stream", "POST", "/v1/chat/completions", _chat(stream=True, **USAGE)),
    Case(
        "chat-stream-thinking-off",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _chat(stream=True, chat_template_kwargs={"thinking": False}, **USAGE),
    ),
    Case(
        "chat-stream-length", "chat-stream", "POST", "/v1/chat/completions", _chat(stream=True, max_tokens=5, **USAGE)
    ),
    Case(
        "chat-stream-n2", "chat-stream", "POST", "/v1/chat/completions", _chat(stream=True, n=2, max_tokens=12, **USAGE)
    ),
    Case(
        "chat-stream-tool-call",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(USER_WEATHER, stream=True, **USAGE),
    ),
    Case("chat-stream-tool-call-history", "chat-stream", "POST", "/v1/chat/completions", _tools(HISTORY, stream=True)),
    Case(
        "chat-stream-parallel-calls",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(USER_PARALLEL, stream=True, **USAGE),
    ),
    Case(
        "chat-stream-chain-next-call",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(CHAIN_AFTER_RESULT, stream=True),
    ),
    Case(
        "chat-stream-long-arguments",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(USER_SAVE, tools=[SAVE_TOOL], max_tokens=4000, stream=True, **USAGE),
    ),
    Case(
        "chat-stream-long-arguments-cut",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(USER_SAVE, tools=[SAVE_TOOL], max_tokens=120, stream=True, chat_template_kwargs={"thinking": False}),
    ),
    Case(
        "chat-stream-json-schema",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _chat(messages=USER_CITIES, response_format=_json_schema(True), stream=True, **USAGE),
    ),
    Case(
        "chat-stream-json-object-with-tools",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(USER_WEATHER, response_format={"type": "json_object"}, stream=True, **USAGE),
    ),
    Case(
        "chat-stream-required-after-result",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(TOOL_RESULT_TURN, tool_choice="required", stream=True, **USAGE),
    ),
    Case(
        "chat-stream-named-after-result",
        "chat-stream",
        "POST",
        "/v1/chat/completions",
        _tools(TOOL_RESULT_TURN, tool_choice={"type": "function", "function": {"name": "get_time"}}, stream=True),
    ),
    # ---- /v1/completions
    Case(
        "completion-basic",
        "completions",
        "POST",
        "/v1/completions",
        {"model": MODEL, "prompt": "The capital of France is", "max_tokens": 40},
    ),
    Case(
        "completion-length",
        "completions",
        "POST",
        "/v1/completions",
        {"model": "any-name", "prompt": "Count to ten:", "max_tokens": 3},
    ),
    Case(
        "completion-stream",
        "completions-stream",
        "POST",
        "/v1/completions",
        {"model": MODEL, "prompt": "The capital of France is", "max_tokens": 40, "stream": True},
    ),
    Case(
        "completion-stream-usage",
        "completions-stream",
        "POST",
        "/v1/completions",
        {"model": MODEL, "prompt": "Count to ten:", "max_tokens": 6, "stream": True, "ignore_eos": True, **USAGE},
    ),
    # ---- native /generate
    Case(
        "generate-text",
        "generate",
        "POST",
        "/generate",
        {"text": "The capital of France is", "sampling_params": {"max_new_tokens": 16}},
    ),
    Case(
        "generate-input-ids",
        "generate",
        "POST",
        "/generate",
        {"input_ids": [11, 12, 13, 14], "sampling_params": {"max_new_tokens": 4, "ignore_eos": True}},
    ),
    Case(
        "generate-stream",
        "generate",
        "POST",
        "/generate",
        {"text": "Hello", "sampling_params": {"max_new_tokens": 5, "ignore_eos": True}, "stream": True},
    ),
    Case(
        "generate-over-context-stream",
        "generate",
        "POST",
        "/generate",
        {"text": "Hello there", "sampling_params": {"max_new_tokens": CONTEXT_LENGTH}, "stream": True},
    ),
    Case(
        "generate-over-context",
        "generate",
        "POST",
        "/generate",
        {"text": "Hello there", "sampling_params": {"max_new_tokens": CONTEXT_LENGTH}},
    ),
    # ---- errors by class (status code and body shape)
    Case(
        "err-content-type",
        "errors",
        "POST",
        "/v1/chat/completions",
        json.dumps(_chat()),
        headers={"content-type": "text/plain"},
    ),
    Case("err-bad-json", "errors", "POST", "/v1/chat/completions", '{"model": '),
    Case("err-missing-messages", "errors", "POST", "/v1/chat/completions", {"model": MODEL}),
    Case("err-wrong-type", "errors", "POST", "/v1/chat/completions", _chat(temperature="hot")),
    Case("err-completion-missing-prompt", "errors", "POST", "/v1/completions", {"model": MODEL}),
    Case("err-too-many-tokens", "errors", "POST", "/v1/chat/completions", _chat(max_tokens=CONTEXT_LENGTH - 8)),
    Case(
        "err-too-many-tokens-stream",
        "errors",
        "POST",
        "/v1/chat/completions",
        _chat(max_tokens=CONTEXT_LENGTH - 8, stream=True),
    ),
    Case("err-max-tokens-over-context", "errors", "POST", "/v1/chat/completions", _chat(max_tokens=CONTEXT_LENGTH + 1)),
    Case(
        "err-completion-too-many-tokens",
        "errors",
        "POST",
        "/v1/completions",
        {"model": MODEL, "prompt": "Hello there", "max_tokens": CONTEXT_LENGTH, "stream": True},
    ),
    Case("err-generate-bad-json", "errors", "POST", "/generate", '{"text": '),
    Case("err-format-bogus", "errors", "POST", "/v1/chat/completions", _chat(response_format={"type": "bogus"})),
    Case(
        "err-format-no-schema", "errors", "POST", "/v1/chat/completions", _chat(response_format={"type": "json_schema"})
    ),
    Case(
        "err-format-schema-missing",
        "errors",
        "POST",
        "/v1/chat/completions",
        _chat(response_format={"type": "json_schema", "json_schema": {"name": "Answer"}}),
    ),
    Case(
        "err-format-strict-not-bool",
        "errors",
        "POST",
        "/v1/chat/completions",
        _chat(response_format={"type": "json_schema", "json_schema": {"name": "A", "schema": {}, "strict": "yes"}}),
    ),
    Case(
        "err-format-no-name",
        "errors",
        "POST",
        "/v1/chat/completions",
        _chat(response_format={"type": "json_schema", "json_schema": {"schema": {"type": "object"}}}),
    ),
    Case(
        "err-format-empty-tag",
        "errors",
        "POST",
        "/v1/chat/completions",
        _chat(response_format={"type": "structural_tag"}),
    ),
    Case(
        "err-format-with-required",
        "errors",
        "POST",
        "/v1/chat/completions",
        _tools(USER_WEATHER, tool_choice="required", response_format={"type": "json_object"}),
    ),
    Case(
        "err-format-with-named",
        "errors",
        "POST",
        "/v1/chat/completions",
        _tools(
            USER_WEATHER,
            tool_choice={"type": "function", "function": {"name": "get_time"}},
            response_format=_json_schema(),
        ),
    ),
    Case("err-required-no-tools", "errors", "POST", "/v1/chat/completions", _chat(tool_choice="required")),
    Case(
        "err-named-unknown-tool",
        "errors",
        "POST",
        "/v1/chat/completions",
        _tools(USER_WEATHER, tool_choice={"type": "function", "function": {"name": "nope"}}),
    ),
    Case("err-unknown-route", "errors", "GET", "/v1/nope"),
    Case("err-wrong-method", "errors", "GET", "/v1/chat/completions"),
    Case("err-wrong-method-models", "errors", "POST", "/v1/models", {}),
    # ---- auth (an emulator started with an API key)
    Case("auth-missing", "auth", "POST", "/v1/chat/completions", _chat(), variant="auth"),
    Case(
        "auth-wrong",
        "auth",
        "POST",
        "/v1/chat/completions",
        _chat(),
        headers={"authorization": "Bearer not-the-key"},
        variant="auth",
    ),
    Case("auth-ok", "auth", "GET", "/v1/models", headers={"authorization": f"Bearer {API_KEY}"}, variant="auth"),
    Case("auth-models-missing", "auth", "GET", "/v1/models", variant="auth"),
    Case("auth-health-open", "auth", "GET", "/health", variant="auth"),
    Case("auth-metrics-open", "auth", "GET", "/metrics", variant="auth"),
    Case(
        "auth-server-info",
        "auth",
        "GET",
        "/server_info",
        headers={"authorization": f"Bearer {API_KEY}"},
        variant="auth",
    ),
    # ---- models and info
    Case("models", "models", "GET", "/v1/models"),
    Case("model-by-id", "models", "GET", f"/v1/models/{MODEL}"),
    Case("model-by-unknown-id", "models", "GET", "/v1/models/gpt-4o"),
    Case("model-info", "info", "GET", "/model_info"),
    Case("server-info", "info", "GET", "/server_info"),
    Case("health", "info", "GET", "/health"),
    Case("health-generate", "info", "GET", "/health_generate"),
    Case("ready", "info", "GET", "/ready"),
    Case("flush-cache", "info", "POST", "/flush_cache"),
    # ---- metrics last, after the traffic above
    Case("metrics", "metrics", "GET", "/metrics"),
]

SURFACES = (
    "chat",
    "chat-stream",
    "completions",
    "completions-stream",
    "generate",
    "errors",
    "auth",
    "models",
    "info",
    "metrics",
    "headers",
)
