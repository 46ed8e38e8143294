"""SGLang's native /generate endpoint, the one bench_serving's ``sglang`` backend drives.

Outputs have TokenizerManager's shape (sglang/srt/managers/tokenizer_manager.py
``_handle_batch_output``): ``text`` and ``output_ids`` (cumulative while streaming, the
default non-incremental mode) and ``meta_info`` with id, finish_reason, prompt/completion/
reasoning/cached token counts, weight_version, num_retractions, and on the last output
e2e_latency and queue_time. bench_serving derives per-token ITL from the completion_tokens
increments, so each chunk is exactly one token and the count is exact. A request past the
context length is refused the way the route does it (entrypoints/http_server.py
``serve_generate_request``): 400 ``{"error": {"message"}}``, or, when streamed, HTTP 200
with one error event and ``[DONE]``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..kimi.tokenizer import piece_id, token_ids
from .content import completion_text
from .disagg import attach, cap_request
from .engine import Job, Progress
from .error_answers import ApiError, RawError
from .events import EOS_TOKEN_ID, Plan, text_plan
from .grammar import json_text_failure
from .protocol import GenerateRequest, SamplingParams
from .sse import DONE, event
from .state import AppState


@dataclass
class _Item:
    """One prompt of a (possibly batched) /generate request."""

    rid: str
    prompt_tokens: int
    plan: Plan
    job: Job
    prefill_only: bool = False  # a PD prefill server's answer: finish_reason length 0 (disagg.py)
    abort: str | None = None
    """The scheduler aborts a streamed request whose grammar does not compile after its first token
    (seen on SGLang 0.5.23): that token, then finish_reason abort with this message (grammar.py)."""


async def generate(request: Request) -> Response:
    state: AppState = request.app.state.emulator
    arrival, raw, req = await state.read_request(request, GenerateRequest, json_only=False)
    cap_request(state.disagg, req)
    prompts = _prompts(req)
    params = _params_per_prompt(req.sampling_params, len(prompts))
    rids = _rids(state, req.rid, len(prompts))
    batched = isinstance(req.text, list) or (bool(req.input_ids) and isinstance((req.input_ids or [None])[0], list))
    if req.stream and batched and len(prompts) != 1:
        raise ApiError("The emulator streams one prompt per /generate request.", 400, "stream")
    try:
        items = [
            _item(state, text, ids, p, rid, arrival, req.stream) for (text, ids), p, rid in zip(prompts, params, rids)
        ]
    except ApiError as err:  # raised inside SGLang's generate_request: the route's own shapes
        if req.stream:
            return StreamingResponse(_stream_error(err.message), media_type="text/event-stream")
        raise RawError(400, {"error": {"message": err.message}}) from None
    state.check_injected_500()
    try:
        await attach(state.disagg, raw, rids[0], [item.job for item in items])
    except ApiError as err:  # the scheduler's abort, as /generate answers it (http_server.py)
        raise RawError(err.status, {"error": {"message": err.message}}) from None
    if state.disagg.mode == "prefill":
        for item in items:
            item.prefill_only = True
    if req.stream:
        return StreamingResponse(_stream(state, items[0]), media_type="text/event-stream")
    results = await asyncio.gather(*(_run(state, item) for item in items))
    return JSONResponse(results if batched else results[0])


def _prompts(req: GenerateRequest) -> list[tuple[str, list[int]]]:
    """(text used for seeding, prompt token ids) per prompt."""
    if req.text is not None:
        texts = req.text if isinstance(req.text, list) else [req.text]
        if not texts or any(not t for t in texts):
            raise ApiError("The input text is empty.", 400, "text")
        return [(t, token_ids(t)) for t in texts]
    ids = req.input_ids or []
    rows: list[list[int]] = ids if ids and isinstance(ids[0], list) else [ids]
    if not rows or any(not r for r in rows):
        raise ApiError("input_ids is empty.", 400, "input_ids")
    return [(" ".join(map(str, r[:64])) + f"#{len(r)}", list(r)) for r in rows]


def _params_per_prompt(params: SamplingParams | list[SamplingParams], n: int) -> list[SamplingParams]:
    if isinstance(params, list):
        if len(params) != n:
            raise ApiError("sampling_params list must match the number of prompts.", 400, "sampling_params")
        return params
    return [params] * n


def _rids(state: AppState, rid: Any, n: int) -> list[str]:
    if isinstance(rid, list):
        if len(rid) != n:
            raise ApiError("rid list must match the number of prompts.", 400, "rid")
        return rid
    if isinstance(rid, str) and n == 1:
        return [rid]
    return [state.next_id("gen") for _ in range(n)]


def _item(
    state: AppState, text: str, ids: list[int], params: SamplingParams, rid: str, arrival: float, streaming: bool
) -> _Item:
    prompt_tokens = len(ids)
    limit = params.max_new_tokens
    state.check_context(prompt_tokens, limit)
    schema = (params.model_extra or {}).get("json_schema")
    failure = state.input_too_long(prompt_tokens) or (json_text_failure(schema) if isinstance(schema, str) else None)
    if failure and not streaming:  # the scheduler aborts it: a 400 (grammar.py)
        raise ApiError(failure)
    rng = state.rng_for("generate", text)
    plan = text_plan(completion_text(text, rng), 1 if failure else limit, params.ignore_eos, rng)
    job = Job.reserving(
        prompt_tokens, plan.completion_tokens, limit, arrival, streaming, ids, _ids(plan, plan.completion_tokens)
    )
    return _Item(rid=rid, prompt_tokens=prompt_tokens, plan=plan, job=job, abort=failure)


def _finish_reason(plan: Plan, prefill_only: bool = False, abort: str | None = None) -> dict[str, Any]:
    if abort is not None:
        return {"type": "abort", "message": abort, "status_code": 400, "err_type": "BadRequestError"}
    if prefill_only:  # prefill.py: FINISH_LENGTH(length=0) once the KV is sent
        return {"type": "length", "length": 0}
    if plan.finish_reason == "length":
        return {"type": "length", "length": plan.completion_tokens}
    return {"type": "stop", "matched": EOS_TOKEN_ID}


def _meta(
    item: _Item, progress: Progress, completion_tokens: int, finished: bool, *, metrics: bool, first: bool = False
) -> dict[str, Any]:
    """TokenizerManager's meta_info, key for key as a real SGLang 0.5.23 server sends it (seen live:
    tests/contract/test_live_differential.py). With --enable-metrics the scheduler's time stats come
    after num_retractions (storage waits, forward entry, prefill end, queue time) and, on the last
    output, the tokenizer's (request received, first-token latency, dispatch end, response sent,
    finished, decode throughput: req_time_stats.py convert_to_output_meta_info); the first streamed
    output carries response_sent_to_client_ts at its end. ``weight_versions`` (one span: the weights
    never change here) is on the last output only; ``cached_tokens_details`` is null when nothing was
    cached; ``dp_rank`` is null without DP attention."""
    admitted = item.job.arrival + progress.queue_seconds
    meta: dict[str, Any] = {
        "id": item.rid,
        "finish_reason": _finish_reason(item.plan, item.prefill_only, item.abort) if finished else None,
        "prompt_tokens": item.prompt_tokens,
        "weight_version": "default",
        "num_retractions": 0,
    }
    if metrics:
        meta["storage_prefetch_wait"] = 0.0
        meta["storage_staging_wait"] = 0.0
        meta["forward_entry_time"] = _wall(admitted)
        meta["prefill_finished_time"] = _wall(progress.first_token_at or admitted)
        meta["queue_time"] = round(progress.queue_seconds, 6)
    meta["reasoning_tokens"] = 0
    meta["completion_tokens"] = completion_tokens
    meta["cached_tokens"] = item.job.cached_tokens
    if finished:
        meta["weight_versions"] = [{"version": "default", "start": 0, "end": completion_tokens}]
    # the scheduler's breakdown (output_streamer.py), device only here
    cached = item.job.cached_tokens
    meta["cached_tokens_details"] = {"device": cached, "host": 0} if cached > 0 else None
    meta["dp_rank"] = None
    sent = time.time()
    if not finished:
        if first and metrics:
            meta["response_sent_to_client_ts"] = sent
        return meta
    end = progress.finished_at or time.monotonic()
    meta["e2e_latency"] = round(end - item.job.arrival, 6)
    if metrics:
        meta["request_received_ts"] = _wall(item.job.arrival)
        meta["first_token_latency"] = (progress.first_token_at or end) - item.job.arrival
        meta["api_server_dispatch_finish_ts"] = _wall(item.job.arrival)
        if item.job.streaming:
            meta["response_sent_to_client_ts"] = sent
        meta["request_finished_ts"] = _wall(end)
        decode = end - (progress.first_token_at or end)
        if completion_tokens > 1 and decode > 0:
            meta["decode_throughput"] = (completion_tokens - 1) / decode
        if not item.job.streaming:
            meta["response_sent_to_client_ts"] = sent
    return meta


def _wall(monotonic: float) -> float:
    """A time.monotonic() instant as a wall-clock timestamp (SGLang's *_ts and *_time fields)."""
    return time.time() - (time.monotonic() - monotonic)


async def _run(state: AppState, item: _Item) -> dict[str, Any]:
    progress = Progress()
    await state.engine.drain(item.job, progress)
    return {
        "text": item.plan.content_text(),
        "output_ids": _ids(item.plan, item.plan.completion_tokens),
        "meta_info": _meta(item, progress, item.plan.completion_tokens, True, metrics=state.settings.enable_metrics),
    }


def _ids(plan: Plan, count: int) -> list[int]:
    return [piece_id(e.text) for e in plan.events[:count]]


async def _stream_error(message: str) -> AsyncIterator[bytes]:
    yield event({"error": {"message": message, "type": "invalid_request_error", "code": 400, "retryable": False}})
    yield DONE


async def _stream(state: AppState, item: _Item) -> AsyncIterator[bytes]:
    progress = Progress()
    text = ""
    total = item.plan.completion_tokens
    metrics = state.settings.enable_metrics
    async with aclosing(state.engine.run(item.job, progress)) as tokens:
        async for index in tokens:
            text += item.plan.events[index].text
            last = index == total - 1
            if last:
                progress.finished_at = time.monotonic()
            yield event(
                {
                    "text": text,
                    "output_ids": _ids(item.plan, index + 1),
                    "meta_info": _meta(item, progress, index + 1, last, metrics=metrics, first=index == 0),
                }
            )
    if total == 0:
        yield event({"text": "", "output_ids": [], "meta_info": _meta(item, progress, 0, True, metrics=metrics)})
    yield DONE
