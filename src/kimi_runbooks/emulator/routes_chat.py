"""/v1/chat/completions, whole and streamed, as SGLang's serving_chat.py answers with the server's parsers.

What a client sees follows SGLang 0.5.23 (sglang/srt/entrypoints/openai/serving_chat.py):
the requested ``model`` is echoed whatever it names; ``n`` choices are sampled side by side;
``reasoning_content`` is always a key (null without reasoning); a stream opens each choice
with a role chunk, sends reasoning, content and tool-call pieces (name first with the id,
then argument pieces), then one finish chunk per choice after the last token and, when
asked, a usage chunk; a finished tool call turns ``stop`` into ``tool_calls``. Chunk shapes
are in openai_shapes.py; what differs per parser (ids, whole-call chunks, the prompt tokens
usage leaves out, a think channel an unforced parser streams as content) is in formats.py.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..kimi.tokenizer import token_ids
from . import openai_shapes as shapes
from .chat_input import read_chat
from .choices import drain_all, run_merged
from .content import chat_reply
from .disagg import attach, cap_request
from .engine import Job
from .error_answers import ApiError
from .events import EOS_TOKEN_ID, Event, Plan, plan_within_budget, reply_events
from .fast_forward import fast_forward
from .formats import ChatFormat, RawTurn
from .grammar import grammar_failure
from .protocol import ChatRequest
from .sse import DONE, error_events, event
from .state import AppState
from .structured import (
    ResponseFormat,
    check_constraints,
    check_response_format,
    check_tool_choice,
    json_answer,
    schema_of,
    structured_reply,
)
from .tool_faults import ToolFaults


@dataclass
class _Turn:
    """One request's fixed facts: ids, echo name, tool-call numbering, parser state."""

    rids: list[str]
    created: int
    model: str
    history_calls: int
    tools_active: bool
    prompt_tokens: int  # as usage reports them (formats.py unreported_prompt_tokens left out)
    faults: ToolFaults
    fmt: ChatFormat
    leak_think: bool  # the think channel streams as content (formats.py thinking_leaks_in_stream)
    cache_report: bool  # --enable-cache-report: usage.prompt_tokens_details.cached_tokens
    cache_details: bool  # the request asked return_cached_tokens_details (sglext)
    jobs: list[Job]  # the engine sets cached_tokens on them when they are admitted
    continuous_usage: bool = False
    """stream_options.continuous_usage_stats: every reasoning, content and tool-call chunk carries the
    usage so far (serving_chat.py _generate_stream_content, _process_tool_call_stream)."""
    argument_ends: dict[tuple[int, int], int | None] = field(default_factory=dict)
    """(choice, call) -> Plan.arguments_end, found once per call, not once per streamed token."""

    @property
    def cached_tokens(self) -> int:
        """Per prompt, as SGLang sums meta_info cached_tokens over the first choice of each prompt."""
        return self.jobs[0].cached_tokens if self.jobs else 0


async def chat_completions(request: Request) -> Response:
    state: AppState = request.app.state.emulator
    arrival, raw, req = await state.read_request(request, ChatRequest)
    factor = fast_forward(request)
    _validate(state, req)
    cap_request(state.disagg, req)
    check_constraints(req.response_format, req.tools or [], req.tool_choice)
    chat = read_chat(req, video=state.settings.capabilities.video, media=state.settings.capabilities.images)
    if state.settings.fault_is("prompt-tokens-off") and state.settings.fault is not None:
        chat.prompt_tokens = round(chat.prompt_tokens * (state.settings.fault.value or 0.8))
    state.check_context(chat.prompt_tokens, req.token_limit)
    state.check_injected_500()
    failure = state.input_too_long(chat.prompt_tokens) or _grammar_failure(state, req)
    if failure:  # the scheduler aborts it: a 400, or one error event when streamed (grammar.py, state.py)
        if req.stream:
            return StreamingResponse(error_events(failure, "BAD_REQUEST"), media_type="text/event-stream")
        raise ApiError(failure)
    plans = [plan_choice(state, req, chat, i) for i in range(req.n)]
    fmt = state.settings.chat_format
    thinks = state.settings.capabilities.model_thinks(req.thinking)
    jobs = [
        Job.reserving(
            chat.prompt_tokens,
            p.completion_tokens,
            req.token_limit,
            arrival,
            req.stream,
            chat.prompt_ids,
            output_ids(fmt, p, history_calls(req), thinks),
        )
        for p in plans
    ]
    for job in jobs:
        job.fast_forward = factor
    rid = state.next_id("chatcmpl")
    await attach(state.disagg, raw, rid, jobs)
    turn = _Turn(
        rids=[rid] + [f"{rid}-{i}" for i in range(1, req.n)],
        created=int(time.time()),
        model=req.model,
        history_calls=history_calls(req),
        tools_active=bool(req.tools) and req.tool_choice != "none" and not json_answer(req.response_format),
        prompt_tokens=chat.prompt_tokens - fmt.unreported_prompt_tokens,
        faults=ToolFaults.from_settings(state.settings),
        fmt=fmt,
        leak_think=fmt.thinking_leaks_in_stream(thinks, req.thinking),
        cache_report=state.settings.enable_cache_report,
        cache_details=req.return_cached_tokens_details,
        jobs=jobs,
        continuous_usage=bool(req.stream_options and req.stream_options.continuous_usage_stats),
    )
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return StreamingResponse(_stream(state, jobs, plans, turn, include_usage), media_type="text/event-stream")
    await drain_all(state.engine, jobs)
    return JSONResponse(_whole(plans, turn))


def _validate(state: AppState, req: ChatRequest) -> None:
    """serving_chat.py ``_validate_request``: the checks that apply to these requests."""
    if not req.messages:
        raise ApiError("Messages cannot be empty.")
    check_tool_choice(req.tools or [], req.tool_choice)
    limit = req.max_completion_tokens or req.max_tokens
    context = state.settings.max_model_len
    if limit and limit > context:
        raise ApiError(
            f"max_completion_tokens is too large: {limit}.This model supports at most {context} completion tokens."
        )
    check_response_format(req.response_format)


def _grammar_failure(state: AppState, req: ChatRequest) -> str | None:
    """Why SGLang's grammar backend would refuse this request's json_schema (grammar.py), if it would."""
    fmt = req.response_format
    if state.settings.fault_is("response-format-ignored") or not isinstance(fmt, ResponseFormat):
        return None
    return grammar_failure(schema_of(fmt)) if fmt.type == "json_schema" else None


def history_calls(req: ChatRequest) -> int:
    """serving_chat.py ``_get_history_tool_calls_cnt``: tool calls already in the conversation."""
    return sum(len(m.tool_calls or []) for m in req.messages if m.role == "assistant")


def plan_choice(state: AppState, req: ChatRequest, chat: Any, choice: int) -> Plan:
    """The token events one choice of this request generates (deterministic: seeded by its content)."""
    settings = state.settings
    parts: list[Any] = ["chat", req.model_dump(mode="json", include={"messages", "tools"})]
    if choice:
        parts.append(choice)
    rng = state.rng_for(*parts)
    faults = ToolFaults.from_settings(settings)
    convo = faults.conversation(chat.conversation)
    reply = chat_reply(convo, rng, bad_tool_json=settings.fault_is("bad-tool-json"))
    caps = settings.capabilities
    thinks = caps.model_thinks(req.thinking)
    if req.response_format is not None and not settings.fault_is("response-format-ignored"):
        reply = structured_reply(reply, req.response_format, convo, rng)
    reply = faults.reply(reply, convo, thinks, history_calls(req))
    if thinks:
        effort = None if settings.fault_is("effort-ignored") else req.effort_requested
        reply = caps.with_effort(reply, effort, rng)
    leak = settings.fault_is("no-reasoning") or not req.separate_reasoning
    fmt = settings.chat_format
    markers = (fmt.think_open if fmt.open_in_output else "", fmt.think_close)
    events = reply_events(reply, thinking=thinks, leak_reasoning=leak, markers=markers)
    return plan_within_budget(reply, events, req.token_limit, req.ignore_eos, rng)


def output_ids(fmt: ChatFormat, plan: Plan, history: int, thinks: bool) -> list[int]:
    """The ids the model generates for this plan (its raw output, markers included: formats.py),
    which the prefix cache keeps after the prompt when the request finishes."""
    turn = RawTurn(plan.events, plan.tool_calls, history, thinks, plan.finish_reason != "length")
    return token_ids("".join(fmt.render(turn)))


def _reasoning_tokens(plan: Plan) -> int:
    return sum(1 for e in plan.events if e.kind == "reasoning")


def _usage(plans: list[Plan], turn: _Turn) -> dict[str, Any]:
    return shapes.usage(
        turn.prompt_tokens,
        sum(p.completion_tokens for p in plans),
        sum(_reasoning_tokens(p) for p in plans),
        turn.cached_tokens if turn.cache_report else None,
    )


def _usage_so_far(plan: Plan, token: int, turn: _Turn) -> dict[str, Any]:
    """The usage a continuous_usage_stats chunk carries: the choice's tokens up to this one."""
    reasoning = sum(1 for e in plan.events[: token + 1] if e.kind == "reasoning")
    return shapes.usage(turn.prompt_tokens, token + 1, reasoning, turn.cached_tokens if turn.cache_report else None)


def _sglext(turn: _Turn) -> dict[str, Any] | None:
    return shapes.cache_details(turn.cached_tokens) if turn.cache_details else None


def _complete_calls(plan: Plan, turn: _Turn) -> list[tuple[Any, str]]:
    """Calls SGLang's detector parses from the whole text: only those whose end was generated."""
    return [
        (call, args)
        for call, args in plan.emitted_tool_calls()
        if plan.finish_reason != "length" or args == call.arguments or turn.faults.keeps_cut_calls()
    ]


def _whole(plans: list[Plan], turn: _Turn) -> dict[str, Any]:
    choices = []
    for index, plan in enumerate(plans):
        calls = [
            shapes.tool_call(turn.faults.call_id(call.name, turn.history_calls, pos), pos, call.name, args)
            for pos, (call, args) in enumerate(_complete_calls(plan, turn))
        ]
        message = shapes.chat_message(plan.content_text(), plan.reasoning_text(), calls or None)
        finish = _faulty_finish(plan, turn, bool(calls))
        choices.append(shapes.chat_choice(index, message, finish, EOS_TOKEN_ID if finish == "stop" else None))
    first = plans[0].completion_tokens if plans else 0
    body = shapes.chat_response(turn.rids[0], turn.created, turn.model, choices, _usage(plans, turn), first)
    sglext = _sglext(turn)
    if sglext is not None:
        body["sglext"] = sglext
    return body


def _token_chunk(ev: Event, pos: int, plan: Plan, index: int, turn: _Turn) -> dict[str, Any] | None:
    """The chunk SGLang sends for the token at ``pos``, or None when its parsers hold it back."""
    rid, created, model = turn.rids[index], turn.created, turn.model
    if turn.leak_think:
        text = _leaked_text(ev, pos, plan, turn.fmt)
        if text is not None:
            return _content_chunk(text, index, turn) if text else None
    if ev.kind == "reasoning":
        return shapes.sse_content(rid, created, model, index, reasoning_content=ev.text)
    if ev.kind == "content":
        return _content_chunk(ev.text, index, turn)
    call = next(c for c in plan.tool_calls if c.index == ev.call)
    position = turn.faults.stream_index(call.index)
    call_id = turn.faults.call_id(call.name, turn.history_calls, call.index)
    if not turn.fmt.streams_tool_arguments:  # the whole call, once its last argument token is out
        key = (index, call.index)
        if key not in turn.argument_ends:
            turn.argument_ends[key] = plan.arguments_end(call)
        if pos != turn.argument_ends[key]:
            return None
        piece = shapes.tool_call(call_id, position, call.name, call.arguments)
    elif ev.kind == "tool_name":
        piece = shapes.tool_call(call_id, position, call.name, "")
    else:
        piece = shapes.tool_call(None, position, None, ev.text)
    return shapes.stream_response(rid, created, model, [shapes.stream_choice(index, tool_calls=[piece])])


def _unstreamed_arguments(plan: Plan, index: int, turn: _Turn) -> dict[str, Any] | None:
    """serving_chat.py _check_for_unstreamed_tool_args, after a choice's last token: a call whose
    header went out but none of its arguments gets ``{}`` (the detector's arguments so far)."""
    if not (turn.tools_active and turn.fmt.streams_tool_arguments):
        return None
    headers = [e.call for e in plan.events if e.kind == "tool_name"]
    if not headers or any(e.kind == "tool_args" and e.call == headers[-1] for e in plan.events):
        return None
    piece = shapes.tool_call(None, turn.faults.stream_index(headers[-1]), None, "{}")
    rid, created, model = turn.rids[index], turn.created, turn.model
    return shapes.stream_response(rid, created, model, [shapes.stream_choice(index, tool_calls=[piece])])


def _content_chunk(text: str, index: int, turn: _Turn) -> dict[str, Any]:
    rid, created, model = turn.rids[index], turn.created, turn.model
    if turn.tools_active:  # the tool-call parser passes normal text on as a pydantic chunk
        return shapes.stream_response(rid, created, model, [shapes.stream_choice(index, content=text)])
    return shapes.sse_content(rid, created, model, index, content=text)


def _leaked_text(ev: Event, pos: int, plan: Plan, fmt: ChatFormat) -> str | None:
    """An unforced parser's content for the think channel: the reasoning text, then the close
    marker on the token that closes it (the next one, or the last when the turn ends thinking).
    None: this token is not part of the leak (normal handling)."""
    first_after = next((i for i, e in enumerate(plan.events) if e.kind != "reasoning"), None)
    if ev.kind == "reasoning":
        closes_here = first_after is None and pos == len(plan.events) - 1 and plan.finish_reason != "length"
        return ev.text + (fmt.think_close if closes_here else "")
    if pos == first_after:
        if ev.kind == "content":
            return fmt.think_close + ev.text
        return fmt.think_close  # a tool call follows: the marker goes out as text, the call as usual
    return None


def _faulty_finish(plan: Plan, turn: _Turn, has_calls: bool) -> str:
    """truncated-call-kept: a cut call still finishes with tool_calls (SGLang says length)."""
    if plan.finish_reason == "length" and has_calls and turn.faults.keeps_cut_calls():
        return "tool_calls"
    return plan.finish_reason


def _stream_finish(plan: Plan, turn: _Turn) -> tuple[str, Any]:
    """Streamed finish: tool_calls keeps the matched stop token (serving_chat.py)."""
    finish = _faulty_finish(plan, turn, bool(plan.emitted_tool_calls()))
    return finish, (EOS_TOKEN_ID if finish in ("stop", "tool_calls") else None)


async def _stream(
    state: AppState, jobs: list[Job], plans: list[Plan], turn: _Turn, include_usage: bool
) -> AsyncIterator[bytes]:
    started: set[int] = set()
    dropped = [turn.faults.dropped_stream_pieces(plan) for plan in plans]
    finished: list[int] = []  # SGLang sends finish chunks in the order choices finished
    last_index = 0

    def role_chunk(index: int) -> bytes:
        started.add(index)
        return event(
            shapes.sse_content(turn.rids[index], turn.created, turn.model, index, role="assistant", content="")
        )

    async for index, token in run_merged(state.engine, jobs):
        if index not in started:
            yield role_chunk(index)
        last_index = index
        if token == plans[index].completion_tokens - 1:
            finished.append(index)
        if token in dropped[index]:
            continue
        ev = plans[index].events[token]
        # a token ending inside a character has no text: SGLang sends no empty delta (serving_chat.py)
        chunk = _token_chunk(ev, token, plans[index], index, turn) if ev.text or ev.kind == "tool_name" else None
        if chunk is not None:
            if turn.continuous_usage:
                chunk["usage"] = _usage_so_far(plans[index], token, turn)
            yield event(chunk)
        if token == plans[index].completion_tokens - 1:
            tail = _unstreamed_arguments(plans[index], index, turn)
            if tail is not None:
                yield event(tail)
    for index in range(len(plans)):
        if index not in started:  # nothing generated: still opened, then finished
            yield role_chunk(index)
            finished.append(index)
            last_index = index
    rid = turn.rids[last_index]
    for index in finished:
        finish, matched = _stream_finish(plans[index], turn)
        yield event(
            shapes.sse_content(rid, turn.created, turn.model, index, finish_reason=finish, matched_stop=matched)
        )
    sglext = _sglext(turn)
    if sglext is not None:  # its own chunk, before the usage chunk (serving_chat.py)
        yield event({**shapes.stream_response(rid, turn.created, turn.model, []), "sglext": sglext})
    if include_usage:
        yield event(shapes.stream_response(rid, turn.created, turn.model, [], _usage(plans, turn)))
    yield DONE
