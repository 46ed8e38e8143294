"""Talking to the server during a check: the openai client, streamed accumulation, transcripts.

Each check gets a `Recorder` that keeps its exchanges (redacted later), timings and token counts;
a check raises `CheckFailed` / `CheckSkipped` with the reason, or returns its pass reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..target.locate import RunHandle
from ..target.served_limits import ServedLimits
from ..target.served_tokenizer import TokenizerChoice
from .results import Status
from .served import ServedModel

if TYPE_CHECKING:
    from openai import OpenAI

MAX_TEXT = 4000  # characters of any one string kept in a transcript


class CheckFailed(Exception):
    pass


class CheckSkipped(Exception):
    pass


# ---------------------------------------------------------------- talking to the server


@dataclass
class StreamResult:
    """A streamed chat completion accumulated the way the cookbook's client code does."""

    reasoning: str = ""
    content: str = ""
    tool_calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish_reason: str | None = None
    order: list[str] = field(default_factory=list)  # kind of each non-empty delta
    chunks: int = 0
    usage: dict[str, Any] | None = None
    argument_pieces: dict[int, int] = field(default_factory=dict)  # argument deltas per tool-call index
    announced: dict[int, list[str]] = field(default_factory=dict)  # tool names announced per index

    def summary(self) -> dict[str, Any]:
        runs: list[list[Any]] = []
        for kind in self.order:
            if runs and runs[-1][0] == kind:
                runs[-1][1] += 1
            else:
                runs.append([kind, 1])
        return {
            "chunks": self.chunks,
            "delta_order": [f"{k} x{n}" for k, n in runs],
            "reasoning_content": self.reasoning,
            "content": self.content,
            "tool_calls": [self.tool_calls[i] for i in sorted(self.tool_calls)],
            "finish_reason": self.finish_reason,
            "usage": self.usage,
        }


class Recorder:
    """Collects one check's exchanges, timings and token counts while it runs."""

    def __init__(self, session: Session) -> None:
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

    def chat(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        """One non-streamed chat completion; the choice's message and finish_reason. `headers`
        (extra HTTP headers) are kept in the transcript with the body."""
        exchange: dict[str, Any] = {"request": {"endpoint": "/v1/chat/completions", **body}}
        if headers:
            exchange["request"]["headers"] = dict(headers)
        self.exchanges.append(exchange)
        start = time.perf_counter()
        try:
            resp = self.s.client.chat.completions.create(**split_extra(body), extra_headers=headers)
        finally:
            self.latency_ms = (self.latency_ms or 0.0) + (time.perf_counter() - start) * 1000
        # warnings off: SGLang adds fields the openai models type differently (metadata: a dict, not str)
        exchange["response"] = resp.model_dump(exclude_none=True, warnings=False)
        self._count(resp.usage)
        if not resp.choices:
            raise CheckFailed("the response has no choices")
        return resp.choices[0]

    def stream(self, body: dict[str, Any]) -> StreamResult:
        """One streamed chat completion, deltas accumulated by tool-call index."""
        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        exchange: dict[str, Any] = {"request": {"endpoint": "/v1/chat/completions", **body}}
        self.exchanges.append(exchange)
        out = StreamResult()
        start = time.perf_counter()
        try:
            for chunk in self.s.client.chat.completions.create(**split_extra(body)):
                out.chunks += 1
                if chunk.usage is not None:
                    out.usage = chunk.usage.model_dump(exclude_none=True, warnings=False)
                    self._count(chunk.usage)
                if not chunk.choices:
                    continue
                choice = chunk.choices[0]
                if choice.finish_reason:
                    out.finish_reason = choice.finish_reason
                if accumulate(out, choice.delta) and self.ttft_ms is None:
                    self.ttft_ms = (time.perf_counter() - start) * 1000
                if time.perf_counter() - start > self.s.timeout:
                    raise CheckFailed(f"timed out: the stream ran longer than timeout={self.s.timeout:g}s")
        finally:
            self.latency_ms = (self.latency_ms or 0.0) + (time.perf_counter() - start) * 1000
            exchange["response"] = out.summary()
        return out


def accumulate(out: StreamResult, delta: Any) -> bool:
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
            out.announced.setdefault(tc.index, []).append(tc.function.name)
        if tc.function and tc.function.arguments:
            slot["arguments"] += tc.function.arguments
            out.argument_pieces[tc.index] = out.argument_pieces.get(tc.index, 0) + 1
        out.order.append("tool_call")
        got = True
    return got


def split_extra(body: dict[str, Any]) -> dict[str, Any]:
    """Fields the openai client does not know (chat_template_kwargs) go through extra_body."""
    known = {"model", "messages", "max_tokens", "stream", "stream_options", "tools", "tool_choice", "temperature"}
    kwargs = {k: v for k, v in body.items() if k in known}
    extra = {k: v for k, v in body.items() if k not in known and k != "endpoint"}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


@dataclass
class Session:
    client: OpenAI
    handle: RunHandle
    timeout: float
    max_tokens: int
    """Completion tokens per request: max_tokens_thinking, capped by the server's context (limits)."""
    image_expect: list[str]
    image_url: str | None
    concurrency: int
    emulated: bool
    served: ServedModel = field(default_factory=ServedModel)
    video_url: str | None = None
    limits: ServedLimits = field(default_factory=ServedLimits)
    """What the server says it serves (context, images): requests are sized from it."""
    tokenizer: TokenizerChoice | None = None
    """The served model's tokenizer (target.served_tokenizer), for checks that count tokens themselves."""

    @property
    def model(self) -> str:
        return self.handle.model

    def body(self, content: Any, **extra: Any) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": self.max_tokens,
            **extra,
        }


def describe_error(exc: BaseException, s: Session) -> str:
    from openai import APIConnectionError, APIStatusError, APITimeoutError

    if isinstance(exc, APITimeoutError):
        return f"timed out after {s.timeout:g}s waiting for the server (raise timeout, or is it overloaded?)"
    if isinstance(exc, APIConnectionError):
        cause = exc.__cause__ or exc
        what = "could not reach" if "Connect" in type(cause).__name__ else "lost the connection to"
        return f"{what} the server at {s.handle.base_url}: {type(cause).__name__}: {cause}"
    if isinstance(exc, APIStatusError):
        if exc.status_code in (401, 403):
            env = s.handle.api_key_env
            sent = f"the key in ${env} was refused" if env else "no API key was sent (api_key_env is not set)"
            fix = (
                f"export {env}=<the key the server was started with>"
                if env
                else "export MY_KEY=<the server's key> and pass api_key_env='MY_KEY' (the variable's NAME)"
            )
            return f"HTTP {exc.status_code} from the server: {sent} ({exc.message[:200]}). Fix: {fix}"
        return f"HTTP {exc.status_code} from the server: {exc.message}"[:500]
    return f"{type(exc).__name__}: {exc}"[:500]


def compact(value: Any) -> Any:
    """Transcripts stay readable: inline images elided, very long strings cut."""
    if isinstance(value, str):
        if value.startswith("data:") and ";base64," in value[:64]:
            head, _, payload = value.partition(",")
            return f"{head},<{len(payload)} base64 chars elided>"
        return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + f"...<{len(value) - MAX_TEXT} chars cut>"
    if isinstance(value, dict):
        return {k: compact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [compact(v) for v in value]
    return value
