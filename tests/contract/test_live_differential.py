"""Live differential fidelity (issue 38 item 3): the same requests to the emulator and to real SGLang.

One real SGLang 0.5.23 server per module, started through the project's own launcher (sglang-cpu:
the bench env's SGLang on this CPU, a tiny random-weight Kimi-K2-shaped checkpoint, the plan's
``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2``), and one emulator in a thread made
comparable (the same served name, max_model_len 8192, the same parsers, a fast latency model).
Every case goes to both; what is compared (live_diff.py):

* JSON bodies as shapes (key sets and value types, recursively), status codes, finish reasons,
  content types and header names;
* streams: SSE framing (only ``data: `` lines, one per event, ``data: [DONE]`` last) and each kind
  of chunk (role, reasoning, content, tool_call, finish, usage, first, last) as a shape;
* error answers to bad requests (an uncompilable json_schema, schema keywords xgrammar cannot
  enforce, an unknown model, a prompt longer than the context, max_tokens past it, broken bodies);
* usage and cached-token reporting on a repeated prompt (the plan does not pass
  --enable-cache-report: prompt_tokens_details stays null; /generate meta_info and sglext carry it);
* structured output (json_schema with pattern, enum, bounded arrays): both answers must validate;
* forced tool_choice (required, named): both must call the tool with schema-valid arguments;
* prompt tokens of requests with tools, each server against its own tokenizer counting the prompt
  SGLang renders (Tool.model_dump keeps ``defer_loading: null``; tool_choice none renders no tools);
* /metrics family names and label sets, /server_info, /model_info and /v1/models keys.

The random model's text is never compared; where content matters the tiny model is scripted through
SGLang's custom logit processor (kimi/scripted.py: token ids from the server's own /v1/tokenize), and
where SGLang's grammar must choose (structured output, forced calls) it runs at temperature 0 with a
logit bias on JSON punctuation and end markers, so it closes each value as soon as the grammar allows.

A difference fails its test unless an entry of DECLARED allows it; each test prints (and records as
its ``summary``) the declared differences it saw and the declared entries of its surface that did
not occur (stale: the table should shrink). Heavy: needs the bench env (skipped without it locally,
a failure with CI=true).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import jsonschema
import pytest
from live_diff import (
    HOP_HEADERS,
    Declared,
    Difference,
    kinds_shapes,
    metric_families,
    parse_json,
    read_sse,
    shape,
    shape_diff,
)

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.lag import FAMILIES as LAG_FAMILIES
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.kimi import k2_format as k2
from kimi_runbooks.kimi.chat_template import render
from kimi_runbooks.kimi.scripted import scripted_fields
from kimi_runbooks.kimi.tokenizer import count_tokens
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed.server_metrics import GAUGES_MAX, GAUGES_SUMMED, HISTOGRAMS, PREFIX
from kimi_runbooks.tools.envs import OFFLINE_ENV
from kimi_runbooks.tools.scripts import script
from tests.support.real_sglang import real_sglang_slot

pytestmark = pytest.mark.heavy

MODEL = "moonshotai/Kimi-K2.6"
CONTEXT = 8192
KV_POOL = 65536

# ---------------------------------------------------------------- the declared differences

DECLARED: tuple[Declared, ...] = (
    Declared("headers", "*", "x-emulated", "the emulator adds X-Emulated: kimi-runbooks",
             "on purpose, so a captured answer says it came from the emulator (emulator/deviations.py)"),
    Declared("info", "server_info", "$.emulated", "emulator-only key (true)",
             "on purpose: deploy, bench and report label every number EMULATED from it (deviations.py)"),
    Declared("metrics", "names", "sglang:is_emulated", "emulator-only gauge",
             "on purpose: a Prometheus scrape of the emulator cannot pass for a real server (deviations.py)"),
    *(Declared("metrics", "names", f"{family}_total", "emulator-only counter",
               "on purpose: how far the emulator fell behind its latency model; the speed stage marks such a "
               "scenario not representative (emulator/lag.py, deviations.py)") for family in LAG_FAMILIES),
    Declared("info", "model_info", "$.embedding", "SGLang adds its resolved embedding plan (an object); the "
             "emulator has no such key",
             "a generation model's plan says family none and nothing in the project reads it; the one-way contract "
             "suite's stub model config has no embedding spec to hold an emulated one to"),
    Declared("prompt_tokens", "tools_*", "usage.prompt_tokens - own count", "SGLang counts each tool's "
             "'\"defer_loading\": null' (8 tokens of Kimi's tokenizer per tool), the emulator does not",
             "SGLang 0.5.23 renders tools with Tool.model_dump(), which keeps defer_loading null (protocol.py); "
             "rendering it too would fail the emulated kvv_prompt_tokens check on every emulated rehearsal of every "
             "platform, for an SGLang release's rendering, not for anything a rehearsal tests; the real-SGLang "
             "rehearsal shows it (its kvv_prompt_tokens fails, named as SGLang's) and the README says it"),
)  # fmt: skip


NULL_MATCHES_ANY_TYPE = {"info/server_info"}
"""Answers whose nulls match any type: /server_info's values are the server args, many left unset (null)
until a platform resolves them (a CPU server resolves other values than an 8-GPU launch); its keys and
the types of the values both sides set are compared."""

# ---------------------------------------------------------------- the two servers


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str
    seconds: float

    @property
    def json(self) -> Any:
        return parse_json(self.text)

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()


@dataclass
class Servers:
    sglang: str
    emulator: str
    tokenizer: str
    started_s: float
    began: float = field(default_factory=time.monotonic)  # the module's first fixture, for the wall time
    ids_cache: dict[str, list[int]] = field(default_factory=dict)
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=300))

    def ids(self, text: str) -> list[int]:
        """`text` in the real server's token ids (its own /v1/tokenize)."""
        if text not in self.ids_cache:
            body = {"model": MODEL, "prompt": text, "add_special_tokens": False}
            resp = self.client.post(self.sglang + "/v1/tokenize", json=body)
            resp.raise_for_status()
            self.ids_cache[text] = [int(t) for t in resp.json()["tokens"]]
        return self.ids_cache[text]

    def send(self, base: str, method: str, path: str, body: Any = None) -> Answer:
        start = time.monotonic()
        if isinstance(body, str):  # a broken body is sent as it is
            resp = self.client.request(method, base + path, content=body, headers={"content-type": "application/json"})
        else:
            resp = self.client.request(method, base + path, json=body)
        headers = {k.lower(): v for k, v in resp.headers.items()}
        return Answer(resp.status_code, headers, resp.text, time.monotonic() - start)


@pytest.fixture(scope="module")
def servers(bench_python: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    """Real SGLang through the project's launcher, and an emulator made comparable with it."""
    from kimi_runbooks.deploy import launch
    from kimi_runbooks.plan import PlanConfig, plan

    with real_sglang_slot("the live differential suite"):
        folder = RunFolder.create(tmp_path_factory.mktemp("live"))
        yield from _servers(launch(plan(PlanConfig(platform="h200")), launcher="sglang-cpu", folder=folder),
                            time.monotonic())  # fmt: skip


def _servers(handle: Any, start: float) -> Iterator[Servers]:
    try:
        settings = EmulatorSettings(
            port=0,
            model=MODEL,
            max_model_len=CONTEXT,
            time_scale=0.01,
            log_startup=False,
            launch_args={
                "tool_call_parser": "kimi_k2",
                "reasoning_parser": "kimi_k2",
                "context_length": CONTEXT,
                "max_total_tokens": KV_POOL,
                "enable_metrics": True,
                "enable_custom_logit_processor": True,
            },
        )
        url, stop = run_in_thread(settings)
        try:
            assert handle.model == MODEL, handle.model
            yield Servers(handle.base_url.rstrip("/"), url, str(handle.tokenizer), time.monotonic() - start, start)
        finally:
            stop()
    finally:
        handle.stop()


# ---------------------------------------------------------------- the cases


@dataclass
class Case:
    surface: str
    name: str
    method: str
    path: str
    body: Any = None
    phase: int = 1  # phase 2 runs after phase 1 has finished (a repeated prompt)


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
PICK_TOOL = {  # strict: SGLang's kimi structural tag then holds the arguments to the schema
    "type": "function",
    "function": {
        "name": "pick_unit",
        "description": "Pick a temperature unit",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"unit": {"type": "string", "enum": ["celsius", "fahrenheit", "kelvin"]}},
            "required": ["unit"],
            "additionalProperties": False,
        },
    },
}
STRUCTURED_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit", "kelvin"]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["hot", "cold", "mild"]}, "maxItems": 2},
    },
    "required": ["code", "unit", "tags"],
    "additionalProperties": False,
}
UNIQUE_SCHEMA = {
    "type": "object",
    "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "uniqueItems": True, "minItems": 2}},
    "required": ["tags"],
}
PATTERN_AND_LENGTH = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^a+$", "maxLength": 4}}}
HELLO = [{"role": "user", "content": "Say hello to the live differential suite."}]
PARIS = [{"role": "user", "content": "What is the weather in Paris?"}]
REPEATED = "A repeated prompt that both servers must find in their prefix cache the second time. " * 8
"""Sent twice; build_cases puts a fresh nonce in front, so a server's cache has never seen it before."""
LONG = "word " * (CONTEXT + 200)


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


def build_cases(s: Servers) -> list[Case]:
    def scripted(text: str) -> dict[str, Any]:
        return scripted_fields(s.ids(text))

    think = scripted(k2.scripted_reply("Hi.", "Hello."))
    instant = scripted("Hello." + k2.TURN_END)
    call = scripted(k2.scripted_reply("Call it.", calls=[("get_weather", json.dumps({"location": "Paris"}))]))
    reason_only = scripted(k2.THINK_OPEN + "R" + k2.THINK_CLOSE)
    pick_prefix = scripted(
        k2.THINK_OPEN + "R" + k2.THINK_CLOSE + k2.TOOL_SECTION_BEGIN + k2.TOOL_CALL_BEGIN + "functions.pick_unit:0"
        + k2.TOOL_ARGUMENT_BEGIN
    )  # fmt: skip
    closers = {
        str(s.ids(t)[0]): 100.0
        for t in ("{", "}", "[", "]", ",", ":", '"', k2.TOOL_CALL_END, k2.TOOL_SECTION_END, k2.TURN_END)
        if len(s.ids(t)) == 1
    }
    greedy = {"temperature": 0, "logit_bias": closers}

    def chat(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {"model": MODEL, "messages": messages, "max_tokens": 200, **extra}

    usage = {"include_usage": True}
    chat_path, named = "/v1/chat/completions", {"type": "function", "function": {"name": "pick_unit"}}
    bad, bad_text = response_format({"type": "strin"}), '{"type": "strin"}'
    nonce = f"Run {uuid.uuid4().hex[:12]}. "
    repeated = [{"role": "user", "content": nonce + REPEATED}]
    both_tools = [WEATHER_TOOL, PICK_TOOL]

    def gen(text: str, new: int, **extra: Any) -> dict[str, Any]:
        return {"text": text, "sampling_params": {"max_new_tokens": new, **extra.pop("params", {})}, **extra}

    def cmpl(prompt: str, **extra: Any) -> dict[str, Any]:
        return {"model": MODEL, "prompt": prompt, "max_tokens": 4, **extra}

    cases = [
        Case("chat", "think", "POST", chat_path, chat(HELLO, **think)),
        Case("chat", "instant", "POST", chat_path, chat(HELLO, chat_template_kwargs={"thinking": False}, **instant)),
        Case("chat", "tool_call", "POST", chat_path, chat(PARIS, tools=[WEATHER_TOOL], **call)),
        Case("chat", "unknown_model", "POST", chat_path, {**chat(HELLO, **think), "model": "no-such-model"}),
        Case("stream", "think", "POST", chat_path, chat(HELLO, stream=True, **think)),
        Case("stream", "think_usage", "POST", chat_path, chat(HELLO, stream=True, stream_options=usage, **think)),
        Case(
            "stream",
            "continuous_usage",
            "POST",
            chat_path,
            chat(HELLO, stream=True, stream_options={**usage, "continuous_usage_stats": True}, **think),
        ),
        Case("stream", "tool_call", "POST", chat_path, chat(PARIS, tools=[WEATHER_TOOL], stream=True, **call)),
        Case("completions", "whole", "POST", "/v1/completions", {"model": MODEL, "prompt": "Hello", "max_tokens": 4}),
        Case(
            "completions",
            "stream",
            "POST",
            "/v1/completions",
            {"model": MODEL, "prompt": "Hello", "max_tokens": 4, "stream": True, "stream_options": usage},
        ),
        Case("generate", "whole", "POST", "/generate", {"text": "Hello", "sampling_params": {"max_new_tokens": 4}}),
        Case(
            "generate",
            "stream",
            "POST",
            "/generate",
            {"text": "Hello", "sampling_params": {"max_new_tokens": 2}, "stream": True},
        ),
        # structured output and forced tool calls: SGLang's grammar chooses, the model at temperature 0
        Case("structured", "json_schema", "POST", chat_path,
             chat(HELLO, max_tokens=60, response_format=response_format(STRUCTURED_SCHEMA), **greedy, **reason_only)),
        Case("tool_choice", "required", "POST", chat_path,
             chat(PARIS, max_tokens=40, tools=[PICK_TOOL], tool_choice="required", **greedy, **pick_prefix)),
        Case("tool_choice", "named", "POST", chat_path,
             chat(PARIS, max_tokens=40, tools=[PICK_TOOL], tool_choice=named, **greedy, **pick_prefix)),
        # bad requests
        Case("errors", "schema_bad_type", "POST", chat_path,
             chat(HELLO, max_tokens=4, response_format=response_format({"type": "strin"}))),
        Case("errors", "schema_bad_type_stream", "POST", chat_path,
             chat(HELLO, max_tokens=4, stream=True, response_format=response_format({"type": "strin"}))),
        Case("errors", "schema_unique_items", "POST", chat_path,
             chat(HELLO, max_tokens=4, response_format=response_format(UNIQUE_SCHEMA))),
        Case("errors", "schema_pattern_and_length", "POST", chat_path,
             chat(HELLO, max_tokens=4, response_format=response_format(PATTERN_AND_LENGTH))),
        Case("errors", "completions_schema_bad_type", "POST", "/v1/completions", cmpl("Hello", response_format=bad)),
        Case("errors", "generate_schema_bad_type", "POST", "/generate",
             gen("Hello", 4, params={"json_schema": bad_text})),
        Case("errors", "completions_schema_bad_type_stream", "POST", "/v1/completions",
             cmpl("Hello", stream=True, response_format=bad)),
        Case("errors", "generate_schema_bad_type_stream", "POST", "/generate",
             gen("Hello", 4, stream=True, params={"json_schema": bad_text})),
        Case("errors", "prompt_too_long", "POST", chat_path, chat([{"role": "user", "content": LONG}], max_tokens=4)),
        Case("errors", "prompt_too_long_stream", "POST", chat_path,
             chat([{"role": "user", "content": LONG}], max_tokens=4, stream=True)),
        Case("errors", "completions_too_long", "POST", "/v1/completions", cmpl(LONG)),
        Case("errors", "generate_too_long", "POST", "/generate", gen(LONG, 4)),
        Case("errors", "generate_too_long_stream", "POST", "/generate", gen(LONG, 4, stream=True)),
        Case("errors", "max_tokens_past_context", "POST", chat_path, chat(HELLO, max_tokens=CONTEXT + 100)),
        Case("errors", "prompt_plus_max_tokens", "POST", chat_path, chat(HELLO, max_tokens=CONTEXT - 4)),
        Case("errors", "malformed_json", "POST", chat_path, '{"model": "x", "messages": [{"role": "user"'),
        Case("errors", "messages_not_a_list", "POST", chat_path, {"model": MODEL, "messages": "hello"}),
        Case("errors", "empty_messages", "POST", chat_path, {"model": MODEL, "messages": [], "max_tokens": 4}),
        Case("errors", "required_without_tools", "POST", chat_path,
             chat(HELLO, max_tokens=4, tool_choice="required")),
        Case("errors", "named_tool_missing", "POST", chat_path,
             chat(HELLO, max_tokens=4, tools=[WEATHER_TOOL], tool_choice=named)),
        Case("errors", "generate_malformed", "POST", "/generate", '{"text": '),
        # usage and the prefix cache: the same prompt twice
        Case("usage", "generate_first", "POST", "/generate", gen(nonce + REPEATED, 2)),
        Case("usage", "generate_repeat", "POST", "/generate", gen(nonce + REPEATED, 2), phase=2),
        Case("usage", "chat_first", "POST", chat_path,
             chat(repeated, max_tokens=2, return_cached_tokens_details=True)),
        Case("usage", "chat_repeat", "POST", chat_path,
             chat(repeated, max_tokens=2, return_cached_tokens_details=True), phase=2),
        Case("usage", "chat_repeat_unasked", "POST", chat_path, chat(repeated, max_tokens=2), phase=2),
        Case("usage", "chat_repeat_stream", "POST", chat_path,
             chat(repeated, max_tokens=2, return_cached_tokens_details=True, stream=True, stream_options=usage),
             phase=2),
        # prompt tokens of requests with tools (compared with each server's own count)
        Case("prompt_tokens", "no_tools", "POST", chat_path, chat(PARIS, max_tokens=1)),
        Case("prompt_tokens", "tools_auto", "POST", chat_path, chat(PARIS, max_tokens=1, tools=both_tools)),
        Case("prompt_tokens", "tools_none", "POST", chat_path,
             chat(PARIS, max_tokens=1, tools=both_tools, tool_choice="none")),
        Case("prompt_tokens", "tools_named", "POST", chat_path,
             chat(PARIS, max_tokens=1, tools=both_tools, tool_choice=named, **scripted("x"))),
        # what the server says about itself
        Case("info", "models", "GET", "/v1/models"),
        Case("info", "model_card", "GET", f"/v1/models/{MODEL}"),
        Case("info", "model_info", "GET", "/model_info"),
        Case("info", "server_info", "GET", "/server_info"),
        Case("info", "health", "GET", "/health"),
        Case("info", "metrics", "GET", "/metrics", phase=3),
    ]  # fmt: skip
    return cases


@dataclass
class Run:
    cases: dict[str, Case]
    sglang: dict[str, Answer]
    emulator: dict[str, Answer]
    seconds: float
    servers: Servers


@pytest.fixture(scope="module")
def run(servers: Servers) -> Run:
    """Every case against both servers: phase by phase, the cases of a phase side by side (the CPU
    server batches them; a repeated prompt waits for its first request)."""
    start = time.monotonic()
    cases = {f"{c.surface}/{c.name}": c for c in build_cases(servers)}
    sglang: dict[str, Answer] = {}
    emulator: dict[str, Answer] = {}
    for phase in sorted({c.phase for c in cases.values()}):
        todo = [(k, c) for k, c in cases.items() if c.phase == phase]
        with ThreadPoolExecutor(max_workers=8) as pool:
            real = {k: pool.submit(servers.send, servers.sglang, c.method, c.path, c.body) for k, c in todo}
            for k, c in todo:
                emulator[k] = servers.send(servers.emulator, c.method, c.path, c.body)
            for k, fut in real.items():
                sglang[k] = fut.result()
    return Run(cases, sglang, emulator, time.monotonic() - start, servers)


# ---------------------------------------------------------------- judging


def judge(
    surface: str, found: list[Difference], record_property: Callable[[str, Any], None], *, headers: bool = True
) -> None:
    """Fail on a difference DECLARED does not allow; print the allowed ones seen and the entries of the
    surfaces this test compared (``headers``: it compared answer headers too) that no difference matched."""
    allowed = [(d, next((e for e in DECLARED if e.matches(d)), None)) for d in found]
    new = [d for d, entry in allowed if entry is None]
    seen = {entry for _, entry in allowed if entry is not None}
    compared = {surface, "headers"} if headers else {surface}
    stale = [e for e in DECLARED if e.surface in compared and e not in seen]
    lines = [f"live differential, surface {surface}: {len(found)} difference(s), {len(new)} undeclared"]
    lines += [f"  declared, seen: {e.line()}" for e in DECLARED if e in seen]
    lines += [f"  declared, NOT seen (stale, remove it): {e.line()}" for e in stale]
    lines += [f"  UNDECLARED: {d.line()}" for d in new]
    text = "\n".join(lines)
    print(text)
    record_property("summary", text)
    assert not new, text


def case_keys(run: Run, surface: str) -> list[str]:
    return [k for k, c in run.cases.items() if c.surface == surface]


def compare_answer(run: Run, key: str, surface: str | None = None) -> list[Difference]:
    """Status, media type, header names and the body's shape (a stream: framing and chunk kinds)."""
    case = run.cases[key]
    surface = surface or case.surface
    emu, real = run.emulator[key], run.sglang[key]
    out: list[Difference] = []

    def differ(where: str, a: Any, b: Any, on: str | None = None) -> None:
        out.append(Difference(on or surface, case.name, where, str(a), str(b)))

    if emu.status != real.status:
        differ("status", emu.status, real.status)
    if emu.media_type != real.media_type:
        differ("content-type", emu.headers.get("content-type"), real.headers.get("content-type"))
    for name in sorted((set(emu.headers) ^ set(real.headers)) - HOP_HEADERS):
        differ(name, emu.headers.get(name, "<absent>"), real.headers.get(name, "<absent>"), on="headers")
    if real.media_type == "text/event-stream" and emu.media_type == real.media_type:
        a, b = read_sse(emu.text), read_sse(real.text)
        if a.framing != b.framing:
            differ("sse framing", a.framing, b.framing)
        ka, kb = kinds_shapes(a.payloads), kinds_shapes(b.payloads)
        for kind in sorted(set(ka) | set(kb)):
            if kind not in ka or kind not in kb:
                differ(
                    f"chunk[{kind}]", "present" if kind in ka else "<absent>", "present" if kind in kb else "<absent>"
                )
                continue
            for where, x, y in shape_diff(ka[kind], kb[kind], f"chunk[{kind}]"):
                differ(where, x, y)
        fa, fb = finishes(a.payloads), finishes(b.payloads)
        if fa != fb:
            differ("finish_reason", fa, fb)
        return out
    lenient = key in NULL_MATCHES_ANY_TYPE
    for where, x, y in shape_diff(shape(emu.json), shape(real.json), null_matches=lenient):
        differ(where, x, y)
    fa, fb = finishes([emu.json]), finishes([real.json])
    if fa != fb:
        differ("finish_reason", fa, fb)
    return out


def finishes(payloads: list[Any]) -> list[Any]:
    out = []
    for p in payloads:
        if not isinstance(p, dict):
            continue
        for choice in p.get("choices") or []:
            if isinstance(choice, dict) and choice.get("finish_reason") is not None:
                out.append(choice["finish_reason"])
        reason = (p.get("meta_info") or {}).get("finish_reason") if isinstance(p.get("meta_info"), dict) else None
        if isinstance(reason, dict):
            out.append(reason.get("type"))
    return out


def surface_test(surface: str, run: Run, record_property: Callable[[str, Any], None]) -> None:
    found = [d for key in case_keys(run, surface) for d in compare_answer(run, key)]
    judge(surface, found, record_property)


# ---------------------------------------------------------------- the tests


def test_real_server_started_through_the_launcher(run: Run, record_property: Callable[[str, Any], None]) -> None:
    text = (
        f"live differential: real SGLang up in {run.servers.started_s:.0f} s (launcher sglang-cpu), "
        f"{len(run.cases)} cases on both servers in {run.seconds:.0f} s"
    )
    print(text)
    record_property("summary", text)
    assert run.sglang["info/health"].status == 200


@pytest.mark.parametrize("surface", ["chat", "stream", "completions", "generate", "errors"])
def test_answers_have_sglangs_shapes(surface: str, run: Run, record_property: Callable[[str, Any], None]) -> None:
    surface_test(surface, run, record_property)


def test_structured_output_validates_on_both(run: Run, record_property: Callable[[str, Any], None]) -> None:
    """json_schema with pattern, enum and a bounded enum array: xgrammar holds the real model to the
    schema; the emulator must write a valid document too."""
    found = list(compare_answer(run, "structured/json_schema"))
    for side, answers in (("emulator", run.emulator), ("sglang", run.sglang)):
        problem = schema_problem(answers["structured/json_schema"], STRUCTURED_SCHEMA, content=True)
        if problem:
            found.append(Difference("structured", "json_schema", f"{side} content", problem, "valid"))
    judge("structured", found, record_property)


def test_forced_tool_choice_calls_the_tool_on_both(run: Run, record_property: Callable[[str, Any], None]) -> None:
    """tool_choice required and named, a strict tool: SGLang's kimi structural tag forces the call."""
    found: list[Difference] = []
    for name in ("required", "named"):
        key = f"tool_choice/{name}"
        found += compare_answer(run, key)
        for side, answers in (("emulator", run.emulator), ("sglang", run.sglang)):
            problem = schema_problem(answers[key], PICK_TOOL["function"]["parameters"], content=False)
            if problem:
                found.append(Difference("tool_choice", name, f"{side} tool call", problem, "a valid pick_unit call"))
    judge("tool_choice", found, record_property)


def schema_problem(answer: Answer, schema: dict[str, Any], *, content: bool) -> str | None:
    try:
        message = answer.json["choices"][0]["message"]
        if content:
            document = json.loads(message["content"])
        else:
            calls = message.get("tool_calls") or []
            names = [c["function"]["name"] for c in calls]
            if names != ["pick_unit"]:
                return f"calls {names}, finish {answer.json['choices'][0]['finish_reason']}"
            document = json.loads(calls[0]["function"]["arguments"])
        jsonschema.validate(document, schema)
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {str(exc)[:120]} in {answer.text[:200]}"
    except jsonschema.ValidationError as exc:
        return f"invalid: {exc.message}"
    return None


def test_usage_and_cached_tokens(run: Run, record_property: Callable[[str, Any], None]) -> None:
    """A repeated prompt: both report cached tokens where SGLang reports them (no --enable-cache-report
    in the plan: usage.prompt_tokens_details null; /generate meta_info and sglext carry them)."""
    found = [d for key in case_keys(run, "usage") for d in compare_answer(run, key)]
    for side, answers in (("emulator", run.emulator), ("sglang", run.sglang)):
        cached = answers["usage/generate_repeat"].json["meta_info"]["cached_tokens"]
        if not cached > 0:
            found.append(Difference("usage", "generate_repeat", f"{side} meta_info.cached_tokens", str(cached), "> 0"))
        unasked = answers["usage/chat_repeat_unasked"].json
        if "sglext" in unasked or unasked["usage"]["prompt_tokens_details"] is not None:
            found.append(Difference("usage", "chat_repeat_unasked", f"{side} cached tokens", "reported", "not asked"))
        first = answers["usage/generate_first"].json["meta_info"]["cached_tokens"]
        if first >= cached:
            found.append(
                Difference("usage", "generate_first", f"{side} cached_tokens first/repeat", str(first), str(cached))
            )
    judge("usage", found, record_property)


def test_prompt_tokens_are_counted_as_sglang_renders_tools(
    run: Run, bench_python: str, record_property: Callable[[str, Any], None]
) -> None:
    """usage.prompt_tokens less each server's own count of the prompt SGLang renders: the tools
    dumped by Tool.model_dump() (``defer_loading: null`` kept), none for tool_choice none, only the
    named one for a named choice. The real server's offset is 0 by construction of this count."""
    keys = case_keys(run, "prompt_tokens")
    rendered = [sglang_rendering(run.cases[k].body) for k in keys]
    real_counts = count_in_bench_env(bench_python, run.servers.tokenizer, rendered)
    emu_counts = [count_tokens(render(r["messages"], r["tools"])) for r in rendered]
    found: list[Difference] = []
    for key, real_count, emu_count in zip(keys, real_counts, emu_counts):
        found += compare_answer(run, key)
        real_off = run.sglang[key].json["usage"]["prompt_tokens"] - real_count
        emu_off = run.emulator[key].json["usage"]["prompt_tokens"] - emu_count
        if real_off != emu_off:
            found.append(
                Difference(
                    "prompt_tokens", run.cases[key].name, "usage.prompt_tokens - own count", str(emu_off), str(real_off)
                )
            )
    judge("prompt_tokens", found, record_property)


def sglang_rendering(body: dict[str, Any]) -> dict[str, Any]:
    """The messages and tools SGLang 0.5.23 hands the chat template (serving_chat.py: tool_choice none
    renders no tools, a named choice only that tool; each tool as Tool.model_dump())."""
    tools = body.get("tools") or []
    choice = body.get("tool_choice")
    if choice == "none":
        tools = []
    elif isinstance(choice, dict):
        tools = [t for t in tools if t["function"]["name"] == choice["function"]["name"]]
    dumped = [{"type": "function", "function": dict(t["function"]), "defer_loading": None} for t in tools]
    return {"messages": body["messages"], "tools": dumped or None}


def count_in_bench_env(bench_python: str, tokenizer: str, items: list[dict[str, Any]]) -> list[int]:
    proc = subprocess.run(
        [bench_python, str(script("chat_tokens.py")), tokenizer],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **OFFLINE_ENV},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts: list[int] = json.loads(proc.stdout.strip().splitlines()[-1])
    return counts


def test_server_descriptions_have_sglangs_keys(run: Run, record_property: Callable[[str, Any], None]) -> None:
    """/v1/models (list and card), /model_info, /server_info, /health: keys and types."""
    found = [d for key in case_keys(run, "info") if key != "info/metrics" for d in compare_answer(run, key)]
    judge("info", found, record_property)


def test_metrics_names_and_labels(run: Run, record_property: Callable[[str, Any], None]) -> None:
    """Families the emulator serves that SGLang does not, and families the speed stage reads
    (speed/server_metrics.py) that SGLang serves and the emulator lacks, are differences; so are the
    label-name sets of the families both serve. SGLang's other families are listed, not judged."""
    emu = metric_families(run.emulator["info/metrics"].text)
    real = metric_families(run.sglang["info/metrics"].text)
    read = {PREFIX + n for n in (*GAUGES_SUMMED, *GAUGES_MAX, *HISTOGRAMS)}
    found: list[Difference] = []
    for name in sorted(set(emu) - set(real)):
        found.append(Difference("metrics", "names", name, "served", "<absent>"))
    for name in sorted((set(real) - set(emu)) & read):
        found.append(Difference("metrics", "names", name, "<absent>", "served (the speed stage reads it)"))
    for name in sorted(set(emu) & set(real)):
        if emu[name] != real[name]:
            found.append(Difference("metrics", "labels", name, labels_text(emu[name]), labels_text(real[name])))
    unread = sorted(set(real) - set(emu) - read)
    never = sorted(read - set(real))
    print(f"SGLang families the emulator lacks and the project does not read ({len(unread)}): {', '.join(unread)}")
    print(f"families the speed stage reads that this CPU server does not serve: {', '.join(never) or 'none'}")
    print(f"live differential: {time.monotonic() - run.servers.began:.0f} s since the real server's launch began")
    judge("metrics", found, record_property, headers=False)


def labels_text(sets: set[frozenset[str]]) -> str:
    return " | ".join(sorted(",".join(sorted(s)) for s in sets))
