"""Invoke stage: prove each documented Kimi feature works, using the `openai` client users will use.

A server that answers is not a deployment that works: a missing `--reasoning-parser` leaks
thinking into `content`, a tool-call parser mismatch returns calls as text, and images fail only
when one is sent. Each check here exercises one feature the way the cookbook's client code does
and returns a `CheckResult` saying pass, fail or skip, and why. A check that times out or gets an
HTTP error fails with that reason; the next check still runs.

Against the emulator, checks that need a real model (does the answer name the item on the
receipt?) are reported `skip` with the reason, never as a pass.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

import jsonschema
import pandas as pd
from openai import APIConnectionError, APIStatusError, APITimeoutError, OpenAI
from pydantic import BaseModel, Field, computed_field

from . import runinfo, secrets
from .probes_image import RECEIPT_ITEM, data_url, receipt_png
from .runinfo import RunHandle, fetch_server_info, source_label

Status = Literal["pass", "fail", "skip"]
INVOKE_FILE = "invoke.json"
_MAX_TEXT = 4000  # characters of any one string kept in a transcript

WEATHER_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Get the current weather for a city",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}}
PRODUCT_TOOL: dict[str, Any] = {"type": "function", "function": {
    "name": "search_product",
    "description": "Search a shop catalogue for a product by name or description",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "minLength": 1, "description": "What to search for"}},
        "required": ["query"]}}}
WEATHER_RESULT = {"location": "Paris", "temperature": 17, "unit": "celsius", "condition": "light rain"}


class CheckResult(BaseModel):
    """One feature check: its verdict, why, what it cost and the redacted exchange behind it."""

    name: str
    status: Status
    reason: str
    latency_ms: float | None = None  # wall time of the check's request(s)
    ttft_ms: float | None = None     # streamed checks: first reasoning, content or tool-call delta
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    emulated: bool = False
    model: str | None = None
    base_url: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    transcript: list[dict[str, Any]] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool | None:
        """True/False for pass/fail; None for skip (a skip is neither)."""
        return None if self.status == "skip" else self.status == "pass"


class ChecksFailed(RuntimeError):
    """Raised by `raise_if_failed` (the notebook's fail_on_error)."""


class _Fail(Exception):
    pass


class _Skip(Exception):
    pass


# ---------------------------------------------------------------- talking to the server

@dataclass
class _Stream:
    """A streamed chat completion accumulated the way the cookbook's client code does."""

    reasoning: str = ""
    content: str = ""
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    order: list[str] = field(default_factory=list)  # kind of each non-empty delta
    chunks: int = 0
    usage: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        runs: list[list[Any]] = []
        for kind in self.order:
            if runs and runs[-1][0] == kind:
                runs[-1][1] += 1
            else:
                runs.append([kind, 1])
        return {"chunks": self.chunks, "delta_order": [f"{k} x{n}" for k, n in runs],
                "reasoning_content": self.reasoning, "content": self.content,
                "tool_calls": [self.tool_calls[i] for i in sorted(self.tool_calls)],
                "finish_reason": self.finish_reason, "usage": self.usage}


class _Recorder:
    """Collects one check's exchanges, timings and token counts while it runs."""

    def __init__(self, session: "_Session") -> None:
        self.s = session
        self.exchanges: list[dict[str, Any]] = []
        self.details: dict[str, Any] = {}
        self.latency_ms: float | None = None
        self.ttft_ms: float | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.extra: list[tuple[str, Status, str]] = []

    def _count(self, usage: Any) -> None:
        if usage is None:
            return
        self.prompt_tokens = (self.prompt_tokens or 0) + (getattr(usage, "prompt_tokens", 0) or 0)
        self.completion_tokens = (self.completion_tokens or 0) + (getattr(usage, "completion_tokens", 0) or 0)

    def chat(self, body: dict[str, Any]) -> Any:
        """One non-streamed chat completion; the choice's message and finish_reason."""
        exchange: dict[str, Any] = {"request": {"endpoint": "/v1/chat/completions", **body}}
        self.exchanges.append(exchange)
        start = time.perf_counter()
        try:
            resp = self.s.client.chat.completions.create(**_split_extra(body))
        finally:
            self.latency_ms = (self.latency_ms or 0.0) + (time.perf_counter() - start) * 1000
        exchange["response"] = resp.model_dump(exclude_none=True)
        self._count(resp.usage)
        if not resp.choices:
            raise _Fail("the response has no choices")
        return resp.choices[0]

    def stream(self, body: dict[str, Any]) -> _Stream:
        """One streamed chat completion, deltas accumulated by tool-call index."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        exchange: dict[str, Any] = {"request": {"endpoint": "/v1/chat/completions", **body}}
        self.exchanges.append(exchange)
        out = _Stream()
        start = time.perf_counter()
        try:
            for chunk in self.s.client.chat.completions.create(**_split_extra(body)):
                out.chunks += 1
                if chunk.usage is not None:
                    out.usage = chunk.usage.model_dump(exclude_none=True)
                    self._count(chunk.usage)
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                if choice.finish_reason:
                    out.finish_reason = choice.finish_reason
                if _accumulate(out, choice.delta) and self.ttft_ms is None:
                    self.ttft_ms = (time.perf_counter() - start) * 1000
                if time.perf_counter() - start > self.s.timeout:
                    raise _Fail(f"timed out: the stream ran longer than timeout={self.s.timeout:g}s")
        finally:
            self.latency_ms = (self.latency_ms or 0.0) + (time.perf_counter() - start) * 1000
            exchange["response"] = out.summary()
        return out


def _accumulate(out: _Stream, delta: Any) -> bool:
    """Add one delta to the stream; True when it carried anything (for TTFT)."""
    got = False
    reasoning = getattr(delta, "reasoning_content", None)
    if reasoning:
        out.reasoning += reasoning
        out.order.append("reasoning")
        got = True
    if delta.content:
        out.content += delta.content
        out.order.append("content")
        got = True
    for tc in delta.tool_calls or []:
        slot = out.tool_calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
        if tc.id:
            slot["id"] = tc.id
        if tc.function and tc.function.name:
            slot["name"] = tc.function.name
        if tc.function and tc.function.arguments:
            slot["arguments"] += tc.function.arguments
        out.order.append("tool_call")
        got = True
    return got


def _split_extra(body: dict[str, Any]) -> dict[str, Any]:
    """Fields the openai client does not know (chat_template_kwargs) go through extra_body."""
    known = {"model", "messages", "max_tokens", "stream", "stream_options", "tools", "tool_choice",
             "temperature"}
    kwargs = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known and k != "endpoint"}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


@dataclass
class _Session:
    client: OpenAI
    handle: RunHandle
    timeout: float
    max_tokens: int
    image_expect: list[str]
    image_url: str | None
    concurrency: int
    emulated: bool

    @property
    def model(self) -> str:
        return self.handle.model

    def body(self, content: Any, **extra: Any) -> dict[str, Any]:
        return {"model": self.model, "messages": [{"role": "user", "content": content}],
                "max_tokens": self.max_tokens, **extra}


# ---------------------------------------------------------------- the checks

def _text_problems(content: str | None, finish: str | None, max_tokens: int,
                   want_finish: str = "stop") -> list[str]:
    problems = []
    if not (content or "").strip():
        problems.append("content is empty")
    if finish != want_finish:
        hint = (f" (ran out of max_tokens={max_tokens}; raise max_tokens_thinking)"
                if finish == "length" else "")
        problems.append(f"finish_reason is {finish!r}, expected {want_finish!r}{hint}")
    return problems


def _think_tag_problem(content: str | None) -> list[str]:
    if re.search(r"</?think>", content or "", re.I):
        return ["content contains <think> tags: reasoning is not being split out "
                "(is the server started with --reasoning-parser kimi_k2?)"]
    return []


def _verdict(problems: list[str], ok: str) -> str:
    if problems:
        raise _Fail("; ".join(problems))
    return ok


def check_models(s: _Session, rec: _Recorder) -> str:
    rec.exchanges.append({"request": {"endpoint": "GET /v1/models"}})
    start = time.perf_counter()
    ids = [m.id for m in s.client.models.list()]
    rec.latency_ms = (time.perf_counter() - start) * 1000
    rec.exchanges[-1]["response"] = {"ids": ids}
    if s.model not in ids:
        raise _Fail(f"/v1/models lists {ids}, not the expected model {s.model!r} "
                    "(check --served-model-name or the model parameter)")
    return f"/v1/models lists {s.model}"


def check_chat(s: _Session, rec: _Recorder) -> str:
    choice = rec.chat(s.body("Say hello to a new colleague in one short sentence."))
    return _verdict(_text_problems(choice.message.content, choice.finish_reason, s.max_tokens),
                    "non-empty answer, finish_reason stop")


_THINK_PROMPT = "Which is bigger, 9.11 or 9.9? Think it through, then answer in one sentence."


def _thinking_problems(reasoning: str | None, content: str | None) -> list[str]:
    problems = []
    reasoning = (reasoning or "").strip()
    if not reasoning:
        problems.append("reasoning_content is empty or missing although thinking is on by default")
    elif len(reasoning) >= 20 and reasoning in (content or ""):
        problems.append("the reasoning is repeated inside content: reasoning is not separate")
    return problems + _think_tag_problem(content)


def check_thinking(s: _Session, rec: _Recorder) -> str:
    choice = rec.chat(s.body(_THINK_PROMPT))
    msg = choice.message
    reasoning = getattr(msg, "reasoning_content", None)
    rec.details["reasoning_chars"] = len(reasoning or "")
    problems = _thinking_problems(reasoning, msg.content)
    problems += _text_problems(msg.content, choice.finish_reason, s.max_tokens)
    return _verdict(problems, "reasoning_content and content both non-empty and separate")


def check_thinking_stream(s: _Session, rec: _Recorder) -> str:
    out = rec.stream(s.body(_THINK_PROMPT))
    problems = _thinking_problems(out.reasoning, out.content)
    problems += _text_problems(out.content, out.finish_reason, s.max_tokens)
    problems += _order_problems(out.order)
    return _verdict(problems, "reasoning deltas streamed before content deltas")


def _order_problems(order: list[str]) -> list[str]:
    """Every reasoning delta must come before the first content delta."""
    if "reasoning" in order and "content" in order:
        last_reasoning = len(order) - 1 - order[::-1].index("reasoning")
        if last_reasoning > order.index("content"):
            return ["reasoning deltas arrived after content deltas had started"]
    return []


def check_instant(s: _Session, rec: _Recorder) -> str:
    choice = rec.chat(s.body(_THINK_PROMPT, chat_template_kwargs={"thinking": False}))
    msg = choice.message
    problems = _instant_problems(getattr(msg, "reasoning_content", None), msg.content)
    problems += _text_problems(msg.content, choice.finish_reason, s.max_tokens)
    return _verdict(problems, "no reasoning_content, non-empty content")


def _instant_problems(reasoning: str | None, content: str | None) -> list[str]:
    problems = []
    if reasoning and reasoning.strip():
        problems.append(f"reasoning_content is present ({len(reasoning)} chars) although "
                        "chat_template_kwargs.thinking=false asked for instant mode")
    return problems + _think_tag_problem(content)


def _tool_problems(calls: list[dict[str, Any]], finish: str | None, tool: dict[str, Any],
                   rec: _Recorder, must_mention: dict[str, str] | None = None) -> list[str]:
    """finish_reason tool_calls, the expected name, JSON arguments valid against the schema."""
    fn = tool["function"]
    rec.details["tool_calls"] = calls
    problems = []
    if finish != "tool_calls":
        problems.append(f"finish_reason is {finish!r}, expected 'tool_calls'")
    if not calls:
        return problems + [f"no tool call came back (expected {fn['name']}); if the call appears "
                           "as text in content, check --tool-call-parser kimi_k2"]
    call = calls[0]
    if call.get("name") != fn["name"]:
        problems.append(f"tool call names {call.get('name')!r}, expected {fn['name']!r}")
    raw = call.get("arguments") or ""
    try:
        args = json.loads(raw)
    except ValueError as exc:
        return problems + [f"arguments are not valid JSON ({exc}): {raw[:200]!r}"]
    errors = sorted(jsonschema.validators.validator_for(fn["parameters"])(fn["parameters"])
                    .iter_errors(args), key=lambda e: list(e.path))
    if errors:
        problems.append("arguments do not match the tool schema: "
                        + "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}"
                                    for e in errors[:3]))
    for key, word in (must_mention or {}).items():
        if isinstance(args, dict) and word.lower() not in str(args.get(key, "")).lower():
            problems.append(f"argument {key}={args.get(key)!r} does not mention {word!r}")
    return problems


_WEATHER_Q = "What's the weather like in Paris right now?"


def check_tool_call(s: _Session, rec: _Recorder) -> str:
    choice = rec.chat(s.body(_WEATHER_Q, tools=[WEATHER_TOOL]))
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or []]
    return _verdict(_tool_problems(calls, choice.finish_reason, WEATHER_TOOL, rec,
                                   {"location": "Paris"}),
                    "get_weather called with schema-valid arguments")


def check_tool_call_stream(s: _Session, rec: _Recorder) -> str:
    out = rec.stream(s.body(_WEATHER_Q, tools=[WEATHER_TOOL]))
    calls = [out.tool_calls[i] for i in sorted(out.tool_calls)]
    return _verdict(_tool_problems(calls, out.finish_reason, WEATHER_TOOL, rec, {"location": "Paris"}),
                    "streamed get_weather call accumulated by index; arguments schema-valid")


def check_tool_result(s: _Session, rec: _Recorder) -> str:
    """A fixed earlier turn (as in the cookbook), so this check does not depend on tool_call."""
    call_id = "functions.get_weather:0"
    body = s.body(_WEATHER_Q, tools=[WEATHER_TOOL])
    body["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [{
            "id": call_id, "type": "function", "function": {
                "name": "get_weather", "arguments": json.dumps({"location": "Paris", "unit": "celsius"})}}]},
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(WEATHER_RESULT)}]
    choice = rec.chat(body)
    content = choice.message.content or ""
    problems = _text_problems(content, choice.finish_reason, s.max_tokens)
    facts = [str(WEATHER_RESULT["temperature"]), "rain"]
    if content.strip() and not any(f in content.lower() for f in facts):
        problems.append(f"the answer does not use the tool result (mentions neither "
                        f"{WEATHER_RESULT['temperature']} degrees nor rain): {content[:200]!r}")
    return _verdict(problems, "final answer restates the tool's result")


_IMAGE_Q = "Which items are on this receipt, and what is the total? Answer briefly."


def check_image(s: _Session, rec: _Recorder) -> str:
    url = data_url(receipt_png())
    choice = rec.chat(s.body([{"type": "image_url", "image_url": {"url": url}},
                              {"type": "text", "text": _IMAGE_Q}]))
    content = choice.message.content or ""
    _verdict(_text_problems(content, choice.finish_reason, s.max_tokens), "")
    rec.extra.append(("image_content", *_image_content(s, content)))
    return "base64 PNG accepted; non-empty answer"


def _image_content(s: _Session, content: str) -> tuple[Status, str]:
    wanted = ", ".join(repr(w) for w in s.image_expect)
    if s.emulated:
        return "skip", (f"not applicable on the emulator, which cannot read images; against a real "
                        f"model the answer must mention {wanted}")
    if not s.image_expect:
        return "skip", "image_expect is empty: nothing to look for in the answer"
    flat = re.sub(r"\s+", " ", content).lower()
    missing = [w for w in s.image_expect if re.sub(r"\s+", " ", w).lower() not in flat]
    if missing:
        return "fail", f"the answer does not mention {', '.join(map(repr, missing))}: {content[:200]!r}"
    return "pass", f"the answer mentions {wanted}"


def check_image_url(s: _Session, rec: _Recorder) -> str:
    if not s.image_url:
        raise _Skip("no image_url given (this variant needs a server with internet access)")
    choice = rec.chat(s.body([{"type": "image_url", "image_url": {"url": s.image_url}},
                              {"type": "text", "text": "Describe this image in two sentences."}]))
    suffix = " (content not judged on the emulator)" if s.emulated else ""
    return _verdict(_text_problems(choice.message.content, choice.finish_reason, s.max_tokens),
                    "image URL accepted; non-empty answer" + suffix)


def check_image_tools(s: _Session, rec: _Recorder) -> str:
    url = data_url(receipt_png())
    choice = rec.chat(s.body([{"type": "image_url", "image_url": {"url": url}},
                              {"type": "text", "text": "Identify the drink on this receipt and "
                                                       "search the catalogue for similar products."}],
                             tools=[PRODUCT_TOOL]))
    calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
             for c in choice.message.tool_calls or []]
    return _verdict(_tool_problems(calls, choice.finish_reason, PRODUCT_TOOL, rec),
                    "search_product called with schema-valid arguments")


def check_concurrency(s: _Session, rec: _Recorder) -> str:
    n = s.concurrency
    if n < 2:
        raise _Skip(f"concurrency={n}: set concurrency to 2 or more to send parallel requests")

    def one(i: int) -> tuple[dict[str, Any], float, Any]:
        body = s.body(f"Reply with the word 'ready' and the number {i}.",
                      chat_template_kwargs={"thinking": False})
        start = time.perf_counter()
        try:
            resp = s.client.chat.completions.create(**_split_extra(body))
        except Exception as exc:  # noqa: BLE001 - each request's failure is reported
            return {"request": body, "error": _describe_error(exc, s)}, 0.0, None
        ms = (time.perf_counter() - start) * 1000
        return {"request": body, "response": resp.model_dump(exclude_none=True)}, ms, resp

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        done = list(pool.map(one, range(n)))
    rec.latency_ms = (time.perf_counter() - start) * 1000
    problems = []
    for i, (exchange, ms, resp) in enumerate(done):
        rec.exchanges.append(exchange)
        if resp is None:
            problems.append(f"request {i}: {exchange['error']}")
            continue
        rec._count(resp.usage)
        if not resp.choices or not (resp.choices[0].message.content or "").strip():
            problems.append(f"request {i}: empty content")
    times = [ms for _, ms, resp in done if resp is not None]
    if times:
        rec.details.update(median_request_ms=statistics.median(times), max_request_ms=max(times))
    if problems:
        raise _Fail(f"{len(problems)} of {n} parallel requests failed: " + "; ".join(problems[:3]))
    return f"{n} parallel requests all answered"


CHECKS: dict[str, Callable[[_Session, _Recorder], str]] = {
    "models": check_models,
    "chat": check_chat,
    "thinking": check_thinking,
    "thinking_stream": check_thinking_stream,
    "instant": check_instant,
    "tool_call": check_tool_call,
    "tool_call_stream": check_tool_call_stream,
    "tool_result": check_tool_result,
    "image": check_image,
    "image_url": check_image_url,
    "image_tools": check_image_tools,
    "concurrency": check_concurrency,
}


# ---------------------------------------------------------------- running

def _describe_error(exc: BaseException, s: _Session) -> str:
    if isinstance(exc, APITimeoutError):
        return f"timed out after {s.timeout:g}s waiting for the server (raise timeout, or is it overloaded?)"
    if isinstance(exc, APIConnectionError):
        cause = exc.__cause__ or exc
        what = "could not reach" if "Connect" in type(cause).__name__ else "lost the connection to"
        return f"{what} the server at {s.handle.base_url}: {type(cause).__name__}: {cause}"
    if isinstance(exc, APIStatusError):
        return f"HTTP {exc.status_code} from the server: {exc.message}"[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


def _compact(value: Any) -> Any:
    """Transcripts stay readable: inline images elided, very long strings cut."""
    if isinstance(value, str):
        if value.startswith("data:") and ";base64," in value[:64]:
            head, _, payload = value.partition(",")
            return f"{head},<{len(payload)} base64 chars elided>"
        return value if len(value) <= _MAX_TEXT else value[:_MAX_TEXT] + f"...<{len(value) - _MAX_TEXT} chars cut>"
    if isinstance(value, dict):
        return {k: _compact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_compact(v) for v in value]
    return value


def _run_one(name: str, s: _Session) -> list[CheckResult]:
    rec = _Recorder(s)
    try:
        status, reason = "pass", CHECKS[name](s, rec)
    except _Skip as exc:
        status, reason = "skip", str(exc)
    except _Fail as exc:
        status, reason = "fail", str(exc)
    except Exception as exc:  # noqa: BLE001 - one broken check must not stop the others
        status, reason = "fail", _describe_error(exc, s)
        if rec.exchanges and "response" not in rec.exchanges[-1]:
            rec.exchanges[-1]["error"] = reason
    where = dict(emulated=s.emulated, model=s.model, base_url=s.handle.base_url)
    names = [s.handle.api_key_env]
    results = [CheckResult(name=name, status=status, reason=secrets.redact(reason, names),
                           latency_ms=rec.latency_ms, ttft_ms=rec.ttft_ms,
                           prompt_tokens=rec.prompt_tokens, completion_tokens=rec.completion_tokens,
                           details=secrets.redact(_compact(rec.details), names),
                           transcript=secrets.redact(_compact(rec.exchanges), names), **where)]
    # Sub-verdicts judged on the same exchange (kept there, so tokens are not counted twice).
    for sub, sub_status, sub_reason in rec.extra:
        results.append(CheckResult(name=sub, status=sub_status, reason=secrets.redact(sub_reason, names),
                                   details={"judged_on": name}, **where))
    return results


def detect_emulated(handle: RunHandle, timeout: float = 10.0) -> bool:
    """True when the handle says so, or /server_info reports `emulated: true`."""
    if handle.emulated:
        return True
    info = fetch_server_info(handle.base_url, handle.api_key(), timeout)
    return bool((info or {}).get("emulated", False))


def resolve_target(run_dir: str | Path | None = None, base_url: str | None = None,
                   model: str | None = None, api_key_env: str | None = None) -> RunHandle:
    """The server to probe: an explicit base_url (external server) or the run folder's handle."""
    return runinfo.resolve_target(run_dir, base_url=base_url, model=model, api_key_env=api_key_env)


def run_all(target: RunHandle | str, checks: Iterable[str] | None = None, *,
            model: str | None = None, api_key_env: str | None = None, timeout: float = 300.0,
            max_tokens_thinking: int = 8192, image_expect: str | list[str] | None = None,
            image_url: str | None = None, concurrency: int = 4, emulated: bool | None = None,
            progress: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
    """Run the checks in order (all by default); each is isolated, so one failure never stops the rest.

    target is a RunHandle or a base_url (then model, else the server's first /v1/models id).
    max_tokens_thinking bounds every generation (Kimi thinks by default). emulated=None asks the server.
    """
    handle = target if isinstance(target, RunHandle) else resolve_target(
        base_url=target, model=model, api_key_env=api_key_env)
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check(s) {unknown}. Fix: choose from {list(CHECKS)} "
                         "or pass checks=None for all.")
    if timeout <= 0 or max_tokens_thinking <= 0:
        raise ValueError("timeout and max_tokens_thinking must be positive.")
    if isinstance(image_expect, str):
        image_expect = [image_expect]
    client = OpenAI(base_url=handle.openai_base_url, api_key=handle.api_key(), timeout=timeout,
                    max_retries=0)
    session = _Session(client=client, handle=handle, timeout=timeout, max_tokens=max_tokens_thinking,
                       image_expect=list(image_expect) if image_expect is not None else [RECEIPT_ITEM],
                       image_url=image_url, concurrency=int(concurrency or 0),
                       emulated=detect_emulated(handle, timeout) if emulated is None else emulated)
    results: list[CheckResult] = []
    try:
        for name in names:
            for result in _run_one(name, session):
                results.append(result)
                if progress:
                    progress(result)
    finally:
        client.close()
    return results


# ---------------------------------------------------------------- reporting

def counts(results: list[CheckResult]) -> dict[str, int]:
    return {k: sum(r.status == k for r in results) for k in ("pass", "fail", "skip")}


def summary_table(results: list[CheckResult]) -> pd.DataFrame:
    """One row per check: verdict and why, timings (labelled emulated or measured), tokens."""
    rows = [{"check": r.name, "status": r.status.upper(), "reason": r.reason,
             "latency_ms": None if r.latency_ms is None else round(r.latency_ms, 1),
             "ttft_ms": None if r.ttft_ms is None else round(r.ttft_ms, 1),
             "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
             "source": source_label(r.emulated, upper=True)} for r in results]
    table = pd.DataFrame(rows, columns=["check", "status", "reason", "latency_ms", "ttft_ms",
                                        "prompt_tokens", "completion_tokens", "source"])
    return table.astype({"prompt_tokens": "Int64", "completion_tokens": "Int64"})


def print_progress(result: CheckResult) -> None:
    """A one-line log per finished check (pass this as run_all's progress)."""
    source = source_label(result.emulated)
    ms = "" if result.latency_ms is None else f" ({result.latency_ms:.0f} ms {source})"
    print(f"{result.name:<17} {result.status.upper():<4}{ms}  {result.reason}", flush=True)


def save(results: list[CheckResult], run_dir: str | Path, api_key_env: str | None = None) -> Path:
    """Write run_dir/invoke.json (redacted), flagged emulated when any check ran on the emulator."""
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    doc = {
        "stage": "invoke",
        "written_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "emulated": any(r.emulated for r in results),
        "source": source_label(any(r.emulated for r in results)),
        "counts": counts(results),
        # "passed" needs at least one check that ran and passed: all-skipped is not a pass
        "all_passed": any(r.status == "pass" for r in results) and not any(r.status == "fail" for r in results),
        "results": [r.model_dump(mode="json") for r in results],
    }
    path = folder / INVOKE_FILE
    path.write_text(json.dumps(secrets.redact(doc, [api_key_env]), indent=2, ensure_ascii=False))
    return path


def load(run_dir: str | Path) -> list[CheckResult]:
    doc = json.loads((Path(run_dir) / INVOKE_FILE).read_text())
    return [CheckResult.model_validate(r) for r in doc["results"]]


def last_exchange(result: CheckResult, limit: int = 3000) -> str:
    """The check's last request/response as indented JSON (already redacted), cut to `limit`."""
    if not result.transcript:
        return "(no exchange with the server was recorded)"
    text = json.dumps(result.transcript[-1], indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "\n..."


def raise_if_failed(results: list[CheckResult]) -> None:
    """Fail loudly (the notebook's fail_on_error) naming each failed check and why."""
    failed = [r for r in results if r.status == "fail"]
    if failed:
        raise ChecksFailed(f"{len(failed)} invoke check(s) failed: "
                           + "; ".join(f"{r.name}: {r.reason}" for r in failed))
