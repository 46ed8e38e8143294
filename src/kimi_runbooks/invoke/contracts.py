"""Checks of the contracts a model declares (served.py chooses them): effort levels, always-thinking,
video input, a long context. Each names the declared field it holds the server to.

* ``reasoning_effort``: every declared level is accepted (top-level ``reasoning_effort``, as the
  SGLang cookbook's Kimi-K3 example sends it) and answers with reasoning, judged by EFFORT_RULE on
  several samples per level (one sample flakes on a real model): no level reasons clearly less than
  the one below, and the top level reasons clearly longer than the bottom one (a server that ignores
  the effort fails there).
* ``always_thinking``: a default request and one sent with ``chat_template_kwargs.thinking=false``
  both come back with ``reasoning_content`` and a clean ``content`` (the model always thinks).
  ``always_thinking_stream_off`` (only when asked for) streams the thinking-off request: SGLang
  0.5.23's kimi_k3 reasoning parser is then not forced and streams the think channel as content
  (serving_chat.py ``_get_reasoning_from_request``, KimiK3Detector ``reasoning_default="thinking"``;
  sgl-project/sglang PR 32677), so it fails there, naming that.
* ``video``: a ``video_url`` part is understood (skipped with the reason when the model declares no
  video, or no clip was given for a real server; the emulator does not fetch, so it gets a placeholder).
* ``long_context``: a prompt of about ``LONG_CONTEXT_FRACTION`` of the longest input the server
  admits (min(context length, KV pool), as SGLang bounds it) is accepted and counted; on a real
  server the passphrase at its start must come back. On an
  emulated server, which does not read prompts, the ~200 s the latency model gives that prefill
  (10 s at the demo's time scale 0.05) is not what is checked: the request asks the emulator to
  run its clock EMULATED_FAST_FORWARD times faster (target/emulated_time.py) and the result says so.
"""

from __future__ import annotations

from statistics import median
from typing import Any

from ..target.emulated_time import FAST_FORWARD_HEADER
from .checks import _text_problems, _verdict
from .results import Status
from .session import CheckFailed, CheckSkipped, Recorder, Session

EFFORT_PROMPT = "How many prime numbers are there between 1 and 60? Think it through, then give the number."
EFFORT_PROMPTS = (
    EFFORT_PROMPT,
    "A train leaves at 09:40 and arrives at 13:05. How long is the trip? Think it through, then answer.",
    "Is 221 a prime number? Think it through, then answer yes or no.",
)
"""One sample per prompt per level: a single sample per level flakes on a real model (two close levels
swap), so the check compares medians."""
EFFORT_ORDER_TOLERANCE = 0.1
EFFORT_MIN_SPREAD = 1.25
EFFORT_RULE = (
    f"median reasoning tokens over {len(EFFORT_PROMPTS)} prompts per level; a level may fall at most "
    f"{EFFORT_ORDER_TOLERANCE:.0%} below the one under it, and the top level must reason at least "
    f"{EFFORT_MIN_SPREAD:g}x the bottom one's median (else the server ignores the effort)"
)
THINK_PROMPT = "Which is bigger, 9.11 or 9.9? Think it through, then answer in one sentence."
LONG_CONTEXT_FRACTION = 0.75
"""Of the context length; the rest leaves room for the answer and for tokenizers that count more
tokens than this check's estimate (one token per word or punctuation mark)."""
PASSPHRASE = "amber-falcon-42"
HAYSTACK = "The river keeps moving while the old stone bridge stays still. "
HAYSTACK_TOKENS = 13  # 12 words and a full stop
LONG_CONTEXT_MARGIN = 256  # tokens left for the chat template and the tokenizer's count differing from the estimate
EMULATED_FAST_FORWARD = 20
"""How much faster an emulated server runs the long prompt's clock (10 s of prefill at the demo's
time scale becomes 0.5 s); acceptance, the count and the answer are checked as on any server."""
PLACEHOLDER_VIDEO = "https://example.invalid/kimi-runbooks-emulated-clip.mp4"


def _reasoning(choice: Any) -> str:
    return getattr(choice.message, "reasoning_content", None) or ""


def _marker_problems(s: Session, content: str | None, where: str) -> list[str]:
    found = [m for m in s.served.think_markers if m in (content or "")]
    return (
        [f"{where}: content carries the think marker {found[0]!r} (the reasoning parser let it through)"]
        if found
        else []
    )


def check_reasoning_effort(s: Session, rec: Recorder) -> str:
    levels = s.served.effort_levels
    if not levels:
        raise CheckSkipped("the model declares no reasoning_effort levels (params/models reasoning_effort)")
    from openai import APIStatusError  # here: the report imports this package without the client

    samples: dict[str, list[int]] = {}
    problems: list[str] = []
    for level in levels:
        level_problems: list[str] = []
        for prompt in EFFORT_PROMPTS:
            try:
                choice = rec.chat(s.body(prompt, reasoning_effort=level))
            except APIStatusError as exc:
                level_problems.append(
                    f"reasoning_effort={level!r} was refused: HTTP {exc.status_code} {exc.message[:200]}"
                )
                break
            reasoning = _reasoning(choice)
            usage = (rec.exchanges[-1].get("response") or {}).get("usage") or {}
            samples.setdefault(level, []).append(int(usage.get("reasoning_tokens") or 0) or len(reasoning.split()))
            if not reasoning.strip():
                level_problems.append(f"reasoning_effort={level!r}: no reasoning_content")
            level_problems += _text_problems(choice.message.content, choice.finish_reason, s.max_tokens)
        problems += level_problems
        shown = f"median {median(samples[level]):g} of {samples[level]} reasoning tokens" if level in samples else ""
        status: Status = "fail" if level_problems else "pass"
        rec.extra.append((f"reasoning_effort[{level}]", status, "; ".join(level_problems) or shown))
    medians = {lv: median(samples[lv]) for lv in levels if lv in samples}
    rec.details["reasoning_tokens_by_effort"] = medians
    rec.details["reasoning_token_samples_by_effort"] = samples
    rec.details["effort_rule"] = EFFORT_RULE
    problems += effort_order_problems(medians, [lv for lv in levels if lv in medians])
    shown = " <= ".join(f"{lv} {medians[lv]:g}" for lv in medians)
    return _verdict(problems, f"every level accepted and honoured, median reasoning tokens {shown}")


def effort_order_problems(medians: dict[str, float], measured: list[str]) -> list[str]:
    """EFFORT_RULE on the median reasoning length of each level (levels least effort first)."""
    problems = []
    for low, high in zip(measured, measured[1:]):
        if medians[high] < medians[low] * (1 - EFFORT_ORDER_TOLERANCE):
            problems.append(
                f"reasoning_effort={high!r} reasoned less (median {medians[high]:g} tokens) than {low!r} "
                f"({medians[low]:g}), by more than the {EFFORT_ORDER_TOLERANCE:.0%} two medians of "
                f"{len(EFFORT_PROMPTS)} samples may differ by chance"
            )
    if len(measured) > 1:
        bottom, top = measured[0], measured[-1]
        if medians[top] < medians[bottom] * EFFORT_MIN_SPREAD:
            problems.append(
                f"the server does not honour reasoning_effort: {top!r} reasoned a median {medians[top]:g} tokens, "
                f"{bottom!r} {medians[bottom]:g}; a server that honours it reasons at least {EFFORT_MIN_SPREAD:g}x as "
                f"long at its top level. Fix: check that the server passes reasoning_effort to the chat template "
                f"(SGLang 0.5.23 serving_chat.py: thinking_effort for Kimi-K3) and that the model declares these levels"
            )
    return problems


def check_always_thinking(s: Session, rec: Recorder) -> str:
    if s.served.thinking != "always":
        raise CheckSkipped("the model's params say thinking: optional (the instant check covers turning it off)")
    parser = s.served.reasoning_parser
    out = rec.stream(s.body(THINK_PROMPT))
    problems = (
        []
        if out.reasoning.strip()
        else [f"default request (streamed): no reasoning_content; is --reasoning-parser {parser} set?"]
    )
    problems += _marker_problems(s, out.content, "default request (streamed)")
    choice = rec.chat(s.body(THINK_PROMPT, chat_template_kwargs={"thinking": False}))
    if not _reasoning(choice).strip():
        problems.append(
            "chat_template_kwargs.thinking=false: no reasoning_content, although the model always thinks "
            "(its thinking went missing or into content)"
        )
    problems += _marker_problems(s, choice.message.content, "thinking=false")
    problems += _text_problems(choice.message.content, choice.finish_reason, s.max_tokens)
    return _verdict(problems, "reasoning_content on a default request and on one asking thinking=false")


def check_always_thinking_stream_off(s: Session, rec: Recorder) -> str:
    if s.served.thinking != "always":
        raise CheckSkipped("the model's params say thinking: optional")
    out = rec.stream(s.body(THINK_PROMPT, chat_template_kwargs={"thinking": False}))
    problems = _marker_problems(s, out.content, "thinking=false (streamed)")
    if not out.reasoning.strip():
        problems.append("thinking=false (streamed): no reasoning_content; the think channel arrived as content")
    if problems and s.served.reasoning_parser == "kimi_k3":
        problems.append(
            "SGLang 0.5.23 does this: its kimi_k3 reasoning parser is forced only when thinking is not false "
            "(sgl-project/sglang PR 32677); do not send thinking=false to this model"
        )
    return _verdict(problems, "streamed thinking=false reply kept its reasoning apart")


def check_video(s: Session, rec: Recorder) -> str:
    if not s.served.video:
        raise CheckSkipped("the model declares no video input (params/models video: false)")
    url = s.video_url or (PLACEHOLDER_VIDEO if s.emulated else None)
    if not url:
        raise CheckSkipped("no video_url given: pass video_url=<a short clip the server can fetch>; no clip ships here")
    parts = [{"type": "video_url", "video_url": {"url": url}}, {"type": "text", "text": "What happens in this clip?"}]
    choice = rec.chat(s.body(parts))
    problems = _text_problems(choice.message.content, choice.finish_reason, s.max_tokens)
    rec.details["video_url"] = url
    note = " (emulator: placeholder URL, not fetched)" if url == PLACEHOLDER_VIDEO else ""
    return _verdict(problems, f"a video_url part was accepted and answered{note}")


def long_prompt(target_tokens: int) -> str:
    repeats = max(1, (target_tokens - 60) // HAYSTACK_TOKENS)
    return (
        f"Remember this passphrase: {PASSPHRASE}. Then read the text below.\n\n"
        + HAYSTACK * repeats
        + "\n\nWhat was the passphrase at the very start? Answer with the passphrase only."
    )


SGLANG_INPUT_RESERVE = 6
"""SGLang 0.5.23 admits an input below min(context, KV pool) - 1 - 5 tokens (managers/tp_worker.py
``max_req_len``, ``max_req_input_len``; the scheduler's validate_input_length refuses the rest)."""


def long_context_room(s: Session) -> tuple[int, str] | None:
    """The longest input the server admits and what bounds it, as SGLang sizes it: min(context length,
    KV pool) - 6. The pool is the server's own (the run's handle or GET /server_info) or else the
    plan's estimate; a server that states max_req_input_len is taken at its word. A rehearsal serves a
    context of its own size (the server's max_model_len), which then stands for the plan's."""
    planned = s.served.context_length
    if s.handle.rehearsal and s.limits.max_model_len:
        planned = s.limits.max_model_len
    pool = s.handle.max_total_num_tokens or s.limits.max_total_num_tokens
    pool_source = "the server's KV pool (max_total_num_tokens)"
    if not pool and s.served.kv_pool_tokens:
        pool, pool_source = s.served.kv_pool_tokens, "the plan's KV pool estimate (kv_pool_tokens)"
    bounds = {
        "the context length": planned - SGLANG_INPUT_RESERVE if planned else None,
        pool_source: pool - SGLANG_INPUT_RESERVE if pool else None,
        "the server's max_req_input_len (GET /server_info)": s.limits.max_req_input_len,
    }
    known = {why: n for why, n in bounds.items() if n and n > 0}
    if not known:
        return None
    why = min(known, key=lambda k: known[k])
    return known[why], why


def check_long_context(s: Session, rec: Recorder) -> str:
    room = long_context_room(s)
    if room is None:
        raise CheckSkipped("no context length known for this server (the plan sets it)")
    context, bound = room
    target = int(context * LONG_CONTEXT_FRACTION)
    served = s.limits.max_model_len
    planned = s.served.context_length
    if served and planned and served < planned and not s.handle.rehearsal:
        raise CheckFailed(
            f"the server accepts {served} tokens per request (max_model_len, GET /v1/models), less than the "
            f"planned context length {planned}: a prompt of about {int(planned * LONG_CONTEXT_FRACTION)} tokens "
            f"({LONG_CONTEXT_FRACTION:.0%}) would be refused. Fix: launch with the planned --context-length"
        )
    answer_room = context - target - LONG_CONTEXT_MARGIN
    body = s.body(long_prompt(target), max_tokens=max(16, min(s.max_tokens, 2048, answer_room)))
    rec.details["bounded_by"] = bound
    rec.details["longest_input"] = context
    headers = None
    if s.emulated:
        headers = {FAST_FORWARD_HEADER: str(EMULATED_FAST_FORWARD)}
        rec.details["emulated_fast_forward"] = EMULATED_FAST_FORWARD
    from openai import APIStatusError

    try:
        choice = rec.chat(body, headers=headers)
    except APIStatusError as exc:
        raise CheckFailed(
            f"a prompt of about {target} tokens ({LONG_CONTEXT_FRACTION:.0%} of {context}, the longest input "
            f"{bound} allows) was "
            f"refused: HTTP {exc.status_code} {exc.message[:300]}"
        ) from None
    counted = rec.prompt_tokens or 0
    rec.details.update(context_length=context, target_prompt_tokens=target, prompt_tokens=counted)
    problems = []
    if counted < target // 2:
        problems.append(f"the server counted {counted} prompt tokens for a prompt of about {target}")
    if counted > context:
        problems.append(f"the server counted {counted} prompt tokens, more than the context length {context}")
    answer = (choice.message.content or "") + _reasoning(choice)
    if not answer.strip():
        problems.append("no answer came back")
    recall = (
        "recall not judged (the emulator does not read prompts); its prefill wait ran "
        f"{EMULATED_FAST_FORWARD}x faster than its latency model's, which this check does not judge"
    )
    if not s.emulated:
        recall = "passphrase recalled"
        if PASSPHRASE not in answer:
            problems.append(f"the passphrase {PASSPHRASE!r} from the start of the prompt did not come back")
    return _verdict(problems, f"{counted} prompt tokens of {context} accepted and answered; {recall}")


CONTRACT_CHECKS = {
    "reasoning_effort": check_reasoning_effort,
    "always_thinking": check_always_thinking,
    "always_thinking_stream_off": check_always_thinking_stream_off,
    "video": check_video,
    "long_context": check_long_context,
}
