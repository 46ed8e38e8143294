"""/v1/chat/completions and /v1/completions, streamed and not.

Shapes follow SGLang's OpenAI layer with the kimi_k2 parsers on: ``reasoning_content``
separate from ``content`` (reasoning deltas stream first), tool calls with ids
``functions.<name>:<index>`` whose first delta carries id, type and name and whose
following deltas carry argument fragments, ``usage`` and ``stream_options.include_usage``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from .chat_input import read_chat
from .content import chat_reply, completion_text
from .engine import Job, Progress
from .errors import ApiError
from .events import EOS_TOKEN_ID, Event, Plan, plan_within_budget, reply_events, text_plan
from .protocol import ChatRequest, CompletionRequest, parse_body
from .sse import DONE, SSE_HEADERS, event
from .state import AppState
from .tokenizer import count_tokens


async def chat_completions(request: Request) -> Response:
    state: AppState = request.app.state.emulator
    arrival = time.monotonic()
    state.check_ready()
    req = parse_body(ChatRequest, await state.read_json(request))
    state.check_model(req.model)
    if req.n != 1:
        raise ApiError("The emulator supports n=1 only.", 400, "n")
    chat = read_chat(req)
    state.check_context(chat.prompt_tokens, req.token_limit)
    state.check_injected_500()
    plan = _chat_plan(state, req, chat)
    job = _job(chat.prompt_tokens, plan, req.token_limit, arrival, req.stream)
    meta = _Meta(state.next_id("chatcmpl"), int(time.time()), req.model)
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return StreamingResponse(
            _chat_stream(state, job, plan, meta, include_usage), media_type="text/event-stream", headers=SSE_HEADERS
        )
    await state.engine.drain(job, Progress())
    return JSONResponse(_chat_body(plan, meta, chat.prompt_tokens))


def _chat_plan(state: AppState, req: ChatRequest, chat) -> Plan:
    settings = state.settings
    rng = state.rng_for("chat", req.model_dump(mode="json", include={"messages", "tools"}))
    convo = chat.conversation
    reply = chat_reply(convo, rng, bad_tool_json=settings.fault_is("bad-tool-json"))
    leak = settings.fault_is("no-reasoning") or not req.separate_reasoning
    events = reply_events(reply, thinking=req.thinking, leak_reasoning=leak)
    return plan_within_budget(reply, events, req.token_limit, req.ignore_eos, rng)


def _job(prompt_tokens: int, plan: Plan, limit: int | None, arrival: float, streaming: bool) -> Job:
    reserve = prompt_tokens + (limit if limit is not None else plan.completion_tokens)
    return Job(
        prompt_tokens=prompt_tokens,
        output_tokens=plan.completion_tokens,
        reserve_tokens=reserve,
        arrival=arrival,
        streaming=streaming,
    )


class _Meta:
    def __init__(self, rid: str, created: int, model: str) -> None:
        self.id, self.created, self.model = rid, created, model

    def chunk(self, obj: str, choices: list[dict[str, Any]], usage: Any = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": choices,
            "usage": usage,
        }


def _usage(prompt: int, completion: int, reasoning: int | None = None) -> dict[str, Any]:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": None,
    }
    if reasoning:
        usage["reasoning_tokens"] = reasoning
    return usage


def _chat_body(plan: Plan, meta: _Meta, prompt_tokens: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": plan.content_text() or None}
    reasoning = plan.reasoning_text()
    if reasoning:
        message["reasoning_content"] = reasoning
    calls = [
        {"id": c.id, "index": c.index, "type": "function", "function": {"name": c.name, "arguments": args}}
        for c, args in plan.emitted_tool_calls()
    ]
    if calls:
        message["tool_calls"] = calls
    reasoning_tokens = sum(1 for e in plan.events if e.kind == "reasoning")
    body = meta.chunk(
        "chat.completion",
        [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": plan.finish_reason,
                "matched_stop": EOS_TOKEN_ID if plan.finish_reason == "stop" else None,
            }
        ],
        _usage(prompt_tokens, plan.completion_tokens, reasoning_tokens),
    )
    body["metadata"] = {"weight_version": "default"}
    return body


def _chat_delta(ev: Event, plan: Plan) -> dict[str, Any]:
    if ev.kind == "reasoning":
        return {"role": None, "content": None, "reasoning_content": ev.text}
    if ev.kind == "content":
        return {"role": None, "content": ev.text}
    call = next(c for c in plan.tool_calls if c.index == ev.call)
    if ev.kind == "tool_name":
        return {
            "role": None,
            "content": None,
            "tool_calls": [
                {
                    "index": call.index,
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ],
        }
    return {
        "role": None,
        "content": None,
        "tool_calls": [
            {"index": call.index, "id": None, "type": None, "function": {"name": None, "arguments": ev.text}}
        ],
    }


async def _chat_stream(state: AppState, job: Job, plan: Plan, meta: _Meta, include_usage: bool) -> AsyncIterator[bytes]:
    obj = "chat.completion.chunk"

    def choice(delta: dict[str, Any], finish: str | None = None) -> list[dict[str, Any]]:
        return [
            {
                "index": 0,
                "delta": delta,
                "logprobs": None,
                "finish_reason": finish,
                "matched_stop": EOS_TOKEN_ID if finish == "stop" else None,
            }
        ]

    async with aclosing(state.engine.run(job, Progress())) as tokens:
        async for index in tokens:
            if index == 0:
                yield event(meta.chunk(obj, choice({"role": "assistant", "content": ""})))
            yield event(meta.chunk(obj, choice(_chat_delta(plan.events[index], plan))))
    yield event(meta.chunk(obj, choice({}, plan.finish_reason)))
    if include_usage:
        reasoning = sum(1 for e in plan.events if e.kind == "reasoning")
        yield event(meta.chunk(obj, [], _usage(job.prompt_tokens, plan.completion_tokens, reasoning)))
    yield DONE


# ---------------------------------------------------------------- /v1/completions


async def completions(request: Request) -> Response:
    state: AppState = request.app.state.emulator
    arrival = time.monotonic()
    state.check_ready()
    req = parse_body(CompletionRequest, await state.read_json(request))
    state.check_model(req.model)
    if req.n != 1:
        raise ApiError("The emulator supports n=1 only.", 400, "n")
    prompt_text, prompt_tokens = _read_prompt(req.prompt)
    state.check_context(prompt_tokens, req.max_tokens)
    state.check_injected_500()
    rng = state.rng_for("completion", req.prompt)
    plan = text_plan(completion_text(prompt_text, rng), req.max_tokens, req.ignore_eos, rng)
    job = _job(prompt_tokens, plan, req.max_tokens, arrival, req.stream)
    meta = _Meta(state.next_id("cmpl"), int(time.time()), req.model)
    echo = prompt_text if req.echo else ""
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return StreamingResponse(
            _completion_stream(state, job, plan, meta, include_usage, echo),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )
    await state.engine.drain(job, Progress())
    body = meta.chunk(
        "text_completion",
        [
            {
                "index": 0,
                "text": echo + plan.content_text(),
                "logprobs": None,
                "finish_reason": plan.finish_reason,
                "matched_stop": EOS_TOKEN_ID if plan.finish_reason == "stop" else None,
            }
        ],
        _usage(prompt_tokens, plan.completion_tokens),
    )
    return JSONResponse(body)


def _read_prompt(prompt: Any) -> tuple[str, int]:
    """(text, token count) of a prompt given as text, token ids, or a one-element batch."""
    if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)):
        if len(prompt) != 1:
            raise ApiError("The emulator accepts one prompt per request.", 400, "prompt")
        prompt = prompt[0]
    if isinstance(prompt, str):
        if not prompt:
            raise ApiError("The prompt is empty.", 400, "prompt")
        return prompt, count_tokens(prompt)
    if not prompt:
        raise ApiError("The prompt is empty.", 400, "prompt")
    return " ".join(str(i) for i in prompt[:64]), len(prompt)


async def _completion_stream(
    state: AppState, job: Job, plan: Plan, meta: _Meta, include_usage: bool, echo: str
) -> AsyncIterator[bytes]:
    obj = "text_completion"

    def choice(text: str, finish: str | None = None) -> list[dict[str, Any]]:
        return [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": finish,
                "matched_stop": EOS_TOKEN_ID if finish == "stop" else None,
            }
        ]

    async with aclosing(state.engine.run(job, Progress())) as tokens:
        async for index in tokens:
            prefix = echo if index == 0 else ""
            yield event(meta.chunk(obj, choice(prefix + plan.events[index].text)))
    yield event(meta.chunk(obj, choice("", plan.finish_reason)))
    if include_usage:
        yield event(meta.chunk(obj, [], _usage(job.prompt_tokens, plan.completion_tokens)))
    yield DONE
