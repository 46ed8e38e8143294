"""SGLang's own kimi_k2 parsers, end to end, on a rehearsal's tiny model made to write Kimi's output.

Against a rehearsal (launcher sglang-cpu) the model writes nonsense, so the feature checks fail with
the model as their cause; these checks instead script the model's tokens (kimi/scripted.py) into
exactly what Kimi writes, and hold the server's answer to what SGLang's reasoning and tool-call
parsers must make of it:

- ``scripted_tool_call``: `<think>R</think>` then a `get_weather` call: reasoning_content R, no
  content, one call with id `functions.get_weather:0`, its arguments as written, finish tool_calls;
- ``scripted_tool_call_stream``: the same streamed: reasoning deltas, then the call accumulated by
  index from its deltas, finish tool_calls;
- ``scripted_instant``: thinking off (`chat_template_kwargs.thinking` false) and plain text: content
  as written, no reasoning, finish stop.

The script's token ids come from the server itself (POST /v1/tokenize with its own tokenizer), so a
tokenizer the checkpoint and the client disagree on cannot pass. Elsewhere (a server without the
scripting processor) they are skipped with the reason.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from ..kimi import k2_format as k2
from ..kimi.scripted import scripted_fields
from ..target.tls import verified_tls
from .checks import WEATHER_TOOL, _tool_problems, _verdict
from .session import CheckFailed, CheckSkipped, Recorder, Session

REASONING = "The user wants the weather in Paris; I will call the tool."
ARGUMENTS = json.dumps({"location": "Paris", "unit": "celsius"})
ANSWER = "Paris is mild today."
QUESTION = "What is the weather in Paris?"


def script_ids(s: Session, text: str) -> list[int]:
    """`text` in the served model's token ids, as the server's tokenizer reads it (POST /v1/tokenize)."""
    if not s.handle.rehearsal:
        raise CheckSkipped("needs a scripted model: only a rehearsal's tiny checkpoint (launcher sglang-cpu) takes one")
    key = s.handle.api_key()
    headers = {"Authorization": f"Bearer {key}"} if key and key != "EMPTY" else {}
    body = {"model": s.model, "prompt": text, "add_special_tokens": False}
    try:
        resp = httpx.post(
            s.handle.base_url.rstrip("/") + "/v1/tokenize",
            json=body,
            headers=headers,
            timeout=s.timeout,
            verify=verified_tls(),
        )
    except httpx.HTTPError as exc:
        raise CheckFailed(f"POST /v1/tokenize failed: {type(exc).__name__}: {exc}") from None
    if resp.status_code != 200:
        raise CheckFailed(f"POST /v1/tokenize answered HTTP {resp.status_code}: {resp.text[:200]}")
    tokens = resp.json().get("tokens")
    if not isinstance(tokens, list) or not tokens:
        raise CheckFailed(f"POST /v1/tokenize gave no tokens: {resp.text[:200]}")
    return [int(t) for t in tokens]


def _tool_call_body(s: Session) -> dict[str, Any]:
    text = k2.scripted_reply(REASONING, calls=[(WEATHER_TOOL["function"]["name"], ARGUMENTS)])
    ids = script_ids(s, text)
    return s.body(QUESTION, tools=[WEATHER_TOOL], max_tokens=len(ids) + 8, **scripted_fields(ids))


def _call_problems(calls: list[dict[str, Any]], finish: str | None, rec: Recorder) -> list[str]:
    problems = _tool_problems(calls, finish, WEATHER_TOOL, rec, {"location": "Paris"})
    if calls:
        if calls[0].get("id") != "functions.get_weather:0":
            problems.append(f"tool call id {calls[0].get('id')!r}, expected 'functions.get_weather:0'")
        if calls[0].get("arguments") != ARGUMENTS:
            problems.append(f"arguments {calls[0].get('arguments')!r}, the model wrote {ARGUMENTS!r}")
        if len(calls) != 1:
            problems.append(f"{len(calls)} tool calls, the model wrote one")
    return problems


def check_scripted_tool_call(s: Session, rec: Recorder) -> str:
    choice = rec.chat(_tool_call_body(s))
    msg = choice.message
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in msg.tool_calls or []]
    problems = _call_problems(calls, choice.finish_reason, rec)
    reasoning = getattr(msg, "reasoning_content", None) or (msg.model_extra or {}).get("reasoning_content")
    if reasoning != REASONING:
        problems.append(f"reasoning_content {reasoning!r}, the model wrote {REASONING!r} inside <think>")
    if msg.content:
        problems.append(f"content {msg.content!r}: the model wrote only reasoning and a tool call")
    rec.details["content"] = msg.content  # SGLang 0.5.23 answers '' here, not null
    return _verdict(problems, "the kimi_k2 parsers split the scripted reasoning and tool call exactly")


def check_scripted_tool_call_stream(s: Session, rec: Recorder) -> str:
    out = rec.stream(_tool_call_body(s))
    calls = [out.tool_calls[i] for i in sorted(out.tool_calls)]
    problems = _call_problems(calls, out.finish_reason, rec)
    reasoning = out.reasoning.removeprefix(k2.THINK_OPEN)
    if out.reasoning != reasoning:
        rec.details["reasoning_starts_with_think"] = True  # SGLang 0.5.23 streams the literal <think> first
    if reasoning != REASONING:
        problems.append(f"streamed reasoning {out.reasoning!r}, the model wrote {REASONING!r} inside <think>")
    if out.content.strip():
        problems.append(f"streamed content {out.content!r}: the model wrote only reasoning and a tool call")
    return _verdict(problems, "streamed: reasoning deltas, then the call assembled from its deltas, as scripted")


def check_scripted_instant(s: Session, rec: Recorder) -> str:
    ids = script_ids(s, ANSWER + k2.TURN_END)
    body = s.body(QUESTION, max_tokens=len(ids) + 8, chat_template_kwargs={"thinking": False}, **scripted_fields(ids))
    choice = rec.chat(body)
    msg = choice.message
    reasoning = getattr(msg, "reasoning_content", None) or (msg.model_extra or {}).get("reasoning_content")
    problems = []
    if msg.content != ANSWER:
        problems.append(f"content {msg.content!r}, the model wrote {ANSWER!r}")
    if reasoning:
        problems.append(f"reasoning_content {reasoning!r} with thinking off")
    if choice.finish_reason != "stop":
        problems.append(f"finish_reason {choice.finish_reason!r}, expected 'stop' at the end-of-turn token")
    return _verdict(problems, "thinking off: the scripted answer came back as content, finish stop")


SCRIPTED_CHECKS = {
    "scripted_tool_call": check_scripted_tool_call,
    "scripted_tool_call_stream": check_scripted_tool_call_stream,
    "scripted_instant": check_scripted_instant,
}
