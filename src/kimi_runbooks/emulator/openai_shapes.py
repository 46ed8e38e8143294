"""JSON bodies and SSE chunks of the OpenAI routes, key for key as SGLang 0.5.23 serialises them.

SGLang builds them two ways and the key sets differ, so both are mirrored:

* ``sse_content``: ``sse_utils.build_sse_content`` (msgspec, ``omit_defaults``): the role,
  reasoning, plain-content and finish chunks of a chat stream. ``reasoning_content`` is always
  present (null when there is none); ``role``/``content`` only when set; no ``usage`` key.
* ``stream_response``: ``ChatCompletionStreamResponse.model_dump_json()``: tool-call chunks,
  content chunks while the tool-call parser is active, and the usage chunk. Every delta key
  is present (``tool_calls`` only when set) and ``usage`` is null when unset.

Whole responses follow ``ChatCompletionResponse`` / ``CompletionResponse`` dumps, usage follows
``UsageProcessor.calculate_token_usage`` (sglang/srt/entrypoints/openai/usage_processor.py).
Tool-call ids are the parser's (formats.py ``ChatFormat.tool_call_id``, after serving_chat.py
``_process_tool_call_id``).
"""

from __future__ import annotations

from typing import Any

WEIGHT_VERSION = "default"


def usage(prompt: int, completion: int, reasoning: int = 0, cached: int | None = None) -> dict[str, Any]:
    """``cached``: the prompt tokens the prefix cache held, reported only with --enable-cache-report
    (None otherwise: usage_processor.py leaves prompt_tokens_details null)."""
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion,
        "completion_tokens": completion,
        "prompt_tokens_details": None if cached is None else {"cached_tokens": cached},
        "reasoning_tokens": reasoning,
        "completion_tokens_details": {"reasoning_tokens": reasoning} if reasoning else None,
    }


def usage_exclude_none(prompt: int, completion: int, reasoning: int = 0, cached: int | None = None) -> dict[str, Any]:
    """The completions stream's final usage (``model_dump_json(exclude_none=True)``)."""
    return {k: v for k, v in usage(prompt, completion, reasoning, cached).items() if v is not None}


def cache_details(cached: int) -> dict[str, Any] | None:
    """``sglext`` for a request that asked ``return_cached_tokens_details``: the scheduler's
    breakdown exists only when some tokens were cached (output_streamer.py get_cached_tokens_details),
    all of them on the device here (no HiCache tiers); SglExt drops its null fields."""
    return {"cached_tokens_details": {"device": cached, "host": 0}} if cached > 0 else None


def tool_call(call_id: str | None, index: int, name: str | None, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "index": index, "type": "function", "function": {"name": name, "arguments": arguments}}


def sse_content(
    rid: str,
    created: int,
    model: str,
    index: int,
    *,
    role: str | None = None,
    content: str | None = None,
    reasoning_content: str | None = None,
    finish_reason: str | None = None,
    matched_stop: Any = None,
) -> dict[str, Any]:
    delta: dict[str, Any] = {"reasoning_content": reasoning_content}
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    return {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": index,
                "delta": delta,
                "logprobs": None,
                "finish_reason": finish_reason,
                "matched_stop": matched_stop,
            }
        ],
    }


def _envelope(
    kind: str,
    rid: str,
    created: int,
    model: str,
    choices: list[dict[str, Any]],
    usage_: dict[str, Any] | None,
    *,
    final: bool,
    first_tokens: int = 0,
) -> dict[str, Any]:
    """What every response and stream chunk holds around its choices, in SGLang's key order; a whole
    (non-streamed) response also carries the weight version in `metadata`, with the spans of output
    tokens each version wrote for the first choice (utils/weight_versions.py
    build_endpoint_weight_version_metadata: one span, the weights never change here)."""
    out: dict[str, Any] = {
        "id": rid,
        "object": kind,
        "created": created,
        "model": model,
        "choices": choices,
        "usage": usage_,
    }
    if final:
        spans = [{"version": WEIGHT_VERSION, "start": 0, "end": first_tokens}]
        out["metadata"] = {"weight_version": WEIGHT_VERSION, "weight_versions": spans}
    return out


def stream_response(
    rid: str, created: int, model: str, choices: list[dict[str, Any]], usage_: dict[str, Any] | None = None
) -> dict[str, Any]:
    return _envelope("chat.completion.chunk", rid, created, model, choices, usage_, final=False)


def stream_choice(
    index: int, *, content: str | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": None, "content": content, "reasoning_content": None}
    if tool_calls is not None:
        delta["tool_calls"] = tool_calls
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": None, "matched_stop": None}


def chat_message(content: str, reasoning: str | None, tool_calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning or None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def chat_response(
    rid: str, created: int, model: str, choices: list[dict[str, Any]], usage_: dict[str, Any], first_tokens: int = 0
) -> dict[str, Any]:
    """``first_tokens``: the first choice's completion tokens (metadata.weight_versions)."""
    return _envelope("chat.completion", rid, created, model, choices, usage_, final=True, first_tokens=first_tokens)


def chat_choice(index: int, message: dict[str, Any], finish_reason: str | None, matched_stop: Any) -> dict[str, Any]:
    return {"index": index, "message": message, **_choice_end(finish_reason, matched_stop)}


def completion_choice(index: int, text: str, finish_reason: str | None, matched_stop: Any) -> dict[str, Any]:
    return {"index": index, "text": text, **_choice_end(finish_reason, matched_stop)}


def _choice_end(finish_reason: str | None, matched_stop: Any) -> dict[str, Any]:
    """The fields that close every whole response's choice, in SGLang's order."""
    return {"logprobs": None, "finish_reason": finish_reason, "matched_stop": matched_stop}


def completion_response(
    rid: str, created: int, model: str, choices: list[dict[str, Any]], usage_: dict[str, Any], first_tokens: int = 0
) -> dict[str, Any]:
    return _envelope("text_completion", rid, created, model, choices, usage_, final=True, first_tokens=first_tokens)


def completion_chunk(
    rid: str, created: int, model: str, choices: list[dict[str, Any]], usage_: dict[str, Any] | None = None
) -> dict[str, Any]:
    return _envelope("text_completion", rid, created, model, choices, usage_, final=False)
