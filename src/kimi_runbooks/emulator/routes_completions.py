"""/v1/completions, whole and streamed, as SGLang's serving_completions.py answers.

The requested ``model`` is echoed; ``n`` choices run side by side; every streamed chunk is a
``CompletionStreamResponse`` dump carrying one token's text, the last one of each choice also
its ``finish_reason`` and ``matched_stop`` (no separate finish chunk); the usage chunk is
dumped with ``exclude_none`` (sglang/srt/entrypoints/openai/serving_completions.py).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..kimi.tokenizer import count_tokens, token_ids
from . import openai_shapes as shapes
from .choices import drain_all, run_merged
from .content import completion_text
from .disagg import attach, cap_request
from .engine import Job
from .error_answers import ApiError
from .events import EOS_TOKEN_ID, Plan, text_plan
from .grammar import grammar_failure, json_text_failure
from .protocol import CompletionRequest
from .sse import DONE, error_events, event
from .state import AppState


async def completions(request: Request) -> Response:
    state: AppState = request.app.state.emulator
    arrival, raw, req = await state.read_request(request, CompletionRequest)
    cap_request(state.disagg, req)
    prompt_text, prompt_tokens = read_prompt(req.prompt)
    prompt_ids = prompt_key(req.prompt)
    state.check_context(prompt_tokens, req.max_tokens)
    state.check_injected_500()
    failure = state.input_too_long(prompt_tokens) or schema_failure(req)
    if failure:  # the scheduler aborts it (grammar.py); the output itself is never constrained here
        if req.stream:
            return StreamingResponse(error_events(failure, "BAD_REQUEST"), media_type="text/event-stream")
        raise ApiError(failure)
    plans = []
    for choice in range(req.n):
        rng = state.rng_for("completion", req.prompt, *([choice] if choice else []))
        plans.append(text_plan(completion_text(prompt_text, rng), req.max_tokens, req.ignore_eos, rng))
    jobs = [
        Job.reserving(
            prompt_tokens,
            p.completion_tokens,
            req.max_tokens,
            arrival,
            req.stream,
            prompt_ids,
            token_ids(p.content_text()),
        )
        for p in plans
    ]
    report = _CacheReport(jobs, state.settings.enable_cache_report, req.return_cached_tokens_details)
    rid = state.next_id("cmpl")
    await attach(state.disagg, raw, rid, jobs)
    rids = [rid] + [f"{rid}-{i}" for i in range(1, req.n)]
    created = int(time.time())
    echo = prompt_text if req.echo else ""
    if req.stream:
        include_usage = bool(req.stream_options and req.stream_options.include_usage)
        return StreamingResponse(
            _stream(state, jobs, plans, rids, created, req.model, prompt_tokens, include_usage, echo, report),
            media_type="text/event-stream",
        )
    await drain_all(state.engine, jobs)
    choices = [
        shapes.completion_choice(i, echo + p.content_text(), p.finish_reason, _matched(p)) for i, p in enumerate(plans)
    ]
    total = sum(p.completion_tokens for p in plans)
    body = shapes.completion_response(
        rids[0],
        created,
        req.model,
        choices,
        shapes.usage(prompt_tokens, total, cached=report.usage_cached),
        plans[0].completion_tokens if plans else 0,
    )
    if report.sglext is not None:
        body["sglext"] = report.sglext
    return JSONResponse(body)


@dataclass
class _CacheReport:
    """The prefix-cache figures one request reports (read after its jobs ran)."""

    jobs: list[Job]
    enabled: bool  # --enable-cache-report
    details: bool  # return_cached_tokens_details

    @property
    def usage_cached(self) -> int | None:
        return self.jobs[0].cached_tokens if self.enabled else None

    @property
    def sglext(self) -> dict[str, Any] | None:
        return shapes.cache_details(self.jobs[0].cached_tokens) if self.details else None


def schema_failure(req: CompletionRequest) -> str | None:
    """A json_schema SGLang's grammar backend would refuse: ``response_format`` (json_schema) or the
    top-level ``json_schema`` string (serving_completions.py ``_build_sampling_params``)."""
    extra = req.model_extra or {}
    fmt = extra.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return grammar_failure(schema) if schema is not None else None
    text = extra.get("json_schema")
    return json_text_failure(text) if isinstance(text, str) else None


def _matched(plan: Plan) -> Any:
    return EOS_TOKEN_ID if plan.finish_reason == "stop" else None


def prompt_key(prompt: Any) -> list[int]:
    """The prompt's token ids (the prefix cache's key): given ids as they are, text tokenized."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return token_ids(prompt)
    return [int(i) for i in prompt] if isinstance(prompt, list) else []


def read_prompt(prompt: Any) -> tuple[str, int]:
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


async def _stream(
    state: AppState,
    jobs: list[Job],
    plans: list[Plan],
    rids: list[str],
    created: int,
    model: str,
    prompt_tokens: int,
    include_usage: bool,
    echo: str,
    report: _CacheReport,
) -> AsyncIterator[bytes]:
    started: set[int] = set()
    last = 0

    def chunk(index: int, text: str, done: bool) -> bytes:
        plan = plans[index]
        if index not in started:
            started.add(index)
            text = echo + text
        choice = shapes.completion_choice(
            index, text, plan.finish_reason if done else None, _matched(plan) if done else None
        )
        return event(shapes.completion_chunk(rids[index], created, model, [choice]))

    async for index, token in run_merged(state.engine, jobs):
        last = index
        plan = plans[index]
        yield chunk(index, plan.events[token].text, token == plan.completion_tokens - 1)
    for index in range(len(plans)):
        if index not in started:  # nothing generated: one finishing chunk
            last = index
            yield chunk(index, "", True)
    if report.sglext is not None:  # its own chunk, before the usage chunk (serving_completions.py)
        yield event({**shapes.completion_chunk(rids[last], created, model, []), "sglext": report.sglext})
    if include_usage:
        total = sum(p.completion_tokens for p in plans)
        usage = shapes.usage_exclude_none(prompt_tokens, total, cached=report.usage_cached)
        yield event(shapes.completion_chunk(rids[last], created, model, [], usage))
    yield DONE
