"""The feature checks: each exercises one documented Kimi feature through the openai client.

A server that answers is not a deployment that works: a missing `--reasoning-parser` leaks
thinking into `content`, a tool-call parser mismatch returns calls as text, and images fail only
when one is sent. Each check exercises one feature the way the cookbook's client code does and
returns why it passed, or raises CheckFailed / CheckSkipped with the reason.

Against the emulator, checks that need a real model (does the answer name the item on the
receipt?) are reported `skip` with the reason, never as a pass.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .agentic_tools import function_tool
from .image import data_url, receipt_png
from .results import Status
from .session import CheckFailed, CheckSkipped, Recorder, Session, describe_error, split_extra

WEATHER_TOOL = function_tool(
    "get_weather",
    "Get the current weather for a city",
    {
        "location": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["location"],
)
PRODUCT_TOOL = function_tool(
    "search_product",
    "Search a shop catalogue for a product by name or description",
    {"query": {"type": "string", "minLength": 1, "description": "What to search for"}},
    ["query"],
)
WEATHER_RESULT = {"location": "Paris", "temperature": 17, "unit": "celsius", "condition": "light rain"}


def _text_problems(content: str | None, finish: str | None, max_tokens: int, want_finish: str = "stop") -> list[str]:
    problems = []
    if not (content or "").strip():
        problems.append("content is empty")
    if finish != want_finish:
        hint = f" (ran out of max_tokens={max_tokens}; raise max_tokens_thinking)" if finish == "length" else ""
        problems.append(f"finish_reason is {finish!r}, expected {want_finish!r}{hint}")
    return problems


THINK_TAGS = re.compile(r"</?think>|<\|(?:open|close)\|>think<\|sep\|>", re.I)
"""Kimi-K2's think tags and Kimi-K3's XTML think markers (sglang function_call/kimik3_format.py)."""


def _think_tag_problem(content: str | None) -> list[str]:
    found = THINK_TAGS.search(content or "")
    if found:
        return [
            f"content contains <think> tags or think markers ({found.group(0)!r}): reasoning is not being split out "
            "(is the server started with the model's --reasoning-parser, kimi_k2 or kimi_k3?)"
        ]
    return []


def _verdict(problems: list[str], ok: str) -> str:
    if problems:
        raise CheckFailed("; ".join(problems))
    return ok


def check_models(s: Session, rec: Recorder) -> str:
    rec.exchanges.append({"request": {"endpoint": "GET /v1/models"}})
    start = time.perf_counter()
    ids = [m.id for m in s.client.models.list()]
    rec.latency_ms = (time.perf_counter() - start) * 1000
    rec.exchanges[-1]["response"] = {"ids": ids}
    if s.model not in ids:
        raise CheckFailed(
            f"/v1/models lists {ids}, not the expected model {s.model!r} "
            "(check --served-model-name or the model parameter)"
        )
    return f"/v1/models lists {s.model}"


def check_chat(s: Session, rec: Recorder) -> str:
    choice = rec.chat(s.body("Say hello to a new colleague in one short sentence."))
    return _verdict(
        _text_problems(choice.message.content, choice.finish_reason, s.max_tokens),
        "non-empty answer, finish_reason stop",
    )


_THINK_PROMPT = "Which is bigger, 9.11 or 9.9? Think it through, then answer in one sentence."


def _thinking_problems(reasoning: str | None, content: str | None) -> list[str]:
    problems = []
    reasoning = (reasoning or "").strip()
    if not reasoning:
        problems.append("reasoning_content is empty or missing although thinking is on by default")
    elif len(reasoning) >= 20 and reasoning in (content or ""):
        problems.append("the reasoning is repeated inside content: reasoning is not separate")
    return problems + _think_tag_problem(content)


def check_thinking(s: Session, rec: Recorder) -> str:
    choice = rec.chat(s.body(_THINK_PROMPT))
    msg = choice.message
    reasoning = getattr(msg, "reasoning_content", None)
    rec.details["reasoning_chars"] = len(reasoning or "")
    problems = _thinking_problems(reasoning, msg.content)
    problems += _text_problems(msg.content, choice.finish_reason, s.max_tokens)
    return _verdict(problems, "reasoning_content and content both non-empty and separate")


def check_thinking_stream(s: Session, rec: Recorder) -> str:
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


def check_instant(s: Session, rec: Recorder) -> str:
    if s.served.thinking == "always":
        raise CheckSkipped("the model always thinks (params/models thinking: always): always_thinking checks it")
    choice = rec.chat(s.body(_THINK_PROMPT, chat_template_kwargs={"thinking": False}))
    msg = choice.message
    problems = _instant_problems(getattr(msg, "reasoning_content", None), msg.content)
    problems += _text_problems(msg.content, choice.finish_reason, s.max_tokens)
    return _verdict(problems, "no reasoning_content, non-empty content")


def _instant_problems(reasoning: str | None, content: str | None) -> list[str]:
    problems = []
    if reasoning and reasoning.strip():
        problems.append(
            f"reasoning_content is present ({len(reasoning)} chars) although "
            "chat_template_kwargs.thinking=false asked for instant mode"
        )
    return problems + _think_tag_problem(content)


def _tool_problems(
    calls: list[dict[str, Any]],
    finish: str | None,
    tool: dict[str, Any],
    rec: Recorder,
    must_mention: dict[str, str] | None = None,
) -> list[str]:
    """finish_reason tool_calls, the expected name, JSON arguments valid against the schema."""
    fn = tool["function"]
    rec.details["tool_calls"] = calls
    problems = []
    if finish != "tool_calls":
        problems.append(f"finish_reason is {finish!r}, expected 'tool_calls'")
    if not calls:
        return problems + [
            f"no tool call came back (expected {fn['name']}); if the call appears "
            f"as text in content, check --tool-call-parser {_parser_of(rec)}"
        ]
    call = calls[0]
    if call.get("name") != fn["name"]:
        problems.append(f"tool call names {call.get('name')!r}, expected {fn['name']!r}")
    raw = call.get("arguments") or ""
    try:
        args = json.loads(raw)
    except ValueError as exc:
        return problems + [f"arguments are not valid JSON ({exc}): {raw[:200]!r}"]
    errors = sorted(
        _validator_for(fn["parameters"])(fn["parameters"]).iter_errors(args),
        key=lambda e: list(e.path),
    )
    if errors:
        problems.append(
            "arguments do not match the tool schema: "
            + "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:3])
        )
    for key, word in (must_mention or {}).items():
        if isinstance(args, dict) and word.lower() not in str(args.get(key, "")).lower():
            problems.append(f"argument {key}={args.get(key)!r} does not mention {word!r}")
    return problems


def _parser_of(rec: Recorder) -> str:
    session = getattr(rec, "s", None)
    return session.served.tool_call_parser if session is not None else "kimi_k2"


_WEATHER_Q = "What's the weather like in Paris right now?"


def check_tool_call(s: Session, rec: Recorder) -> str:
    choice = rec.chat(s.body(_WEATHER_Q, tools=[WEATHER_TOOL]))
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in choice.message.tool_calls or []
    ]
    return _verdict(
        _tool_problems(calls, choice.finish_reason, WEATHER_TOOL, rec, {"location": "Paris"}),
        "get_weather called with schema-valid arguments",
    )


def check_tool_call_stream(s: Session, rec: Recorder) -> str:
    out = rec.stream(s.body(_WEATHER_Q, tools=[WEATHER_TOOL]))
    calls = [out.tool_calls[i] for i in sorted(out.tool_calls)]
    return _verdict(
        _tool_problems(calls, out.finish_reason, WEATHER_TOOL, rec, {"location": "Paris"}),
        "streamed get_weather call accumulated by index; arguments schema-valid",
    )


def check_tool_result(s: Session, rec: Recorder) -> str:
    """A fixed earlier turn (as in the cookbook), so this check does not depend on tool_call."""
    call_id = "functions.get_weather:0"
    body = s.body(_WEATHER_Q, tools=[WEATHER_TOOL])
    body["messages"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "arguments": json.dumps({"location": "Paris", "unit": "celsius"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": json.dumps(WEATHER_RESULT)},
    ]
    choice = rec.chat(body)
    content = choice.message.content or ""
    problems = _text_problems(content, choice.finish_reason, s.max_tokens)
    facts = [str(WEATHER_RESULT["temperature"]), "rain"]
    if content.strip() and not any(f in content.lower() for f in facts):
        problems.append(
            f"the answer does not use the tool result (mentions neither "
            f"{WEATHER_RESULT['temperature']} degrees nor rain): {content[:200]!r}"
        )
    return _verdict(problems, "final answer restates the tool's result")


_IMAGE_Q = "Which items are on this receipt, and what is the total? Answer briefly."


def check_image(s: Session, rec: Recorder) -> str:
    url = data_url(receipt_png())
    choice = rec.chat(s.body([{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": _IMAGE_Q}]))
    content = choice.message.content or ""
    _verdict(_text_problems(content, choice.finish_reason, s.max_tokens), "")
    rec.extra.append(("image_content", *_image_content(s, content)))
    return "base64 PNG accepted; non-empty answer"


def _image_content(s: Session, content: str) -> tuple[Status, str]:
    wanted = ", ".join(repr(w) for w in s.image_expect)
    if s.emulated:
        return "skip", (
            f"not applicable on the emulator, which cannot read images; against a real "
            f"model the answer must mention {wanted}"
        )
    if not s.image_expect:
        return "skip", "image_expect is empty: nothing to look for in the answer"
    flat = re.sub(r"\s+", " ", content).lower()
    missing = [w for w in s.image_expect if re.sub(r"\s+", " ", w).lower() not in flat]
    if missing:
        return "fail", f"the answer does not mention {', '.join(map(repr, missing))}: {content[:200]!r}"
    return "pass", f"the answer mentions {wanted}"


def check_image_url(s: Session, rec: Recorder) -> str:
    if not s.image_url:
        raise CheckSkipped("no image_url given (this variant needs a server with internet access)")
    choice = rec.chat(
        s.body(
            [
                {"type": "image_url", "image_url": {"url": s.image_url}},
                {"type": "text", "text": "Describe this image in two sentences."},
            ]
        )
    )
    suffix = " (content not judged on the emulator)" if s.emulated else ""
    return _verdict(
        _text_problems(choice.message.content, choice.finish_reason, s.max_tokens),
        "image URL accepted; non-empty answer" + suffix,
    )


def check_image_tools(s: Session, rec: Recorder) -> str:
    url = data_url(receipt_png())
    choice = rec.chat(
        s.body(
            [
                {"type": "image_url", "image_url": {"url": url}},
                {
                    "type": "text",
                    "text": "Identify the drink on this receipt and search the catalogue for similar products.",
                },
            ],
            tools=[PRODUCT_TOOL],
        )
    )
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in choice.message.tool_calls or []
    ]
    return _verdict(
        _tool_problems(calls, choice.finish_reason, PRODUCT_TOOL, rec),
        "search_product called with schema-valid arguments",
    )


def check_concurrency(s: Session, rec: Recorder) -> str:
    n = s.concurrency
    if n < 2:
        raise CheckSkipped(f"concurrency={n}: set concurrency to 2 or more to send parallel requests")

    def one(i: int) -> tuple[dict[str, Any], float, Any]:
        body = s.body(f"Reply with the word 'ready' and the number {i}.", chat_template_kwargs={"thinking": False})
        start = time.perf_counter()
        try:
            resp = s.client.chat.completions.create(**split_extra(body))
        except Exception as exc:  # noqa: BLE001 - each request's failure is reported
            return {"request": body, "error": describe_error(exc, s)}, 0.0, None
        ms = (time.perf_counter() - start) * 1000
        return {"request": body, "response": resp.model_dump(exclude_none=True, warnings=False)}, ms, resp

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=n) as pool:
        done = list(pool.map(one, range(n)))
    rec.latency_ms = (time.perf_counter() - start) * 1000
    problems = []
    for i, (exchange, _ms, resp) in enumerate(done):
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
        raise CheckFailed(f"{len(problems)} of {n} parallel requests failed: " + "; ".join(problems[:3]))
    return f"{n} parallel requests all answered"


CHECKS: dict[str, Callable[[Session, Recorder], str]] = {
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


def _validator_for(schema: Any) -> Any:
    """jsonschema's validator class for `schema`, imported on first use: importing jsonschema
    costs ~0.8 s (its optional format checkers), paid by every kernel that imports the report."""
    import jsonschema

    return jsonschema.validators.validator_for(schema)
