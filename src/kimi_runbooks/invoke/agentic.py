"""The agentic conformance suite: multi-turn tool calling as Kimi users run it, case by case.

Part of the invoke stage (`run_all` runs it after the feature checks) and runnable alone
(`run_agentic`). Each case records `{expected, observed, verdict, reason}` and its redacted
transcript in a `CheckResult` with ``suite="agentic"``; `agentic_card` is what the report shows.
The emulator's fault modes (emulator/tool_faults.py) reproduce each failure a case catches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ..origin import source_label
from . import agentic_cases as cases
from . import agentic_choice as choice
from .results import CheckResult
from .session import Recorder, Session


@dataclass(frozen=True)
class AgenticCase:
    name: str
    expected: str
    run: Callable[[Session, Recorder], str]


def _both(name: str, fn: Callable[..., str], expected: str) -> list[AgenticCase]:
    return [
        AgenticCase(name, expected, partial(fn, stream=False)),
        AgenticCase(f"{name}_stream", expected + " (streamed)", partial(fn, stream=True)),
    ]


_CASES: list[AgenticCase] = [
    *_both(
        "multi_turn",
        cases.multi_turn,
        "get_weather -> result -> search_places -> result -> book_table (reusing the restaurant found) -> "
        "result -> a non-empty final answer; every id functions.<name>:<calls so far>, unique across the "
        "conversation; every turn's arguments valid against the schema",
    ),
    *_both(
        "parallel_calls",
        cases.parallel_calls,
        "get_weather and get_time called together in one turn (ids functions.get_weather:0 and "
        "functions.get_time:1, distinct indices); both results sent back, then one answer that uses both",
    ),
    *_both(
        "long_arguments",
        cases.long_arguments,
        "a save_document call whose ~4 KB argument (nested objects, unicode, escaped quotes, backslashes) "
        "equals the document given; a stream sends it in many pieces that reassemble exactly",
    ),
    AgenticCase(
        "tool_names",
        "one call to geo-lookup_v2 (hyphen, underscore, digit in the name), id functions.geo-lookup_v2:0, "
        "not the similarly named geo_lookup-v1",
        cases.tool_names,
    ),
    AgenticCase("no_parameters", "a get_server_time call with arguments {}", cases.no_parameters),
    AgenticCase(
        "tool_choice_auto",
        "auto: a get_weather call for a weather question; a plain answer (stop) when no tool is needed",
        choice.tool_choice_auto,
    ),
    AgenticCase(
        "tool_choice_required",
        "required: a schema-valid call although the prompt needs no tool",
        choice.tool_choice_required,
    ),
    AgenticCase(
        "tool_choice_none",
        "none: a non-empty plain answer, no tool_calls, no markers, finish_reason stop, although the prompt asks "
        "for the tool",
        choice.tool_choice_none,
    ),
    AgenticCase(
        "tool_choice_named",
        "named get_time: only get_time is called although the prompt is about the weather",
        choice.tool_choice_named,
    ),
    AgenticCase(
        "thinking_then_call",
        "thinking on (streamed): non-empty reasoning_content, every reasoning delta before the first tool-call "
        "delta, then a schema-valid get_weather call",
        choice.thinking_then_call,
    ),
    AgenticCase(
        "instant_then_call",
        "thinking off (chat_template_kwargs.thinking=false): no reasoning_content, a schema-valid get_weather call",
        choice.instant_then_call,
    ),
    *_both(
        "follow_up",
        choice.follow_up,
        "after the tool result (history ids in Kimi format, reasoning echoed): a non-empty answer that uses the "
        "result, finish_reason stop, no further call",
    ),
    *_both(
        "leaks",
        choice.leaks,
        "no <|tool_call...|> markers and no <think> tags in content or reasoning_content on a call turn, its "
        "follow-up and a tool_choice none turn",
    ),
    *_both(
        "truncated_call",
        choice.truncated_call,
        f"max_tokens={choice.TRUNCATE_AT} cuts a save_document call: finish_reason length and no tool_calls in a "
        "whole response; a stream may already have sent partial argument deltas (SGLang 0.5.23 does) and must "
        "end with finish_reason length, never tool_calls",
    ),
]
AGENTIC_CASES: dict[str, AgenticCase] = {c.name: c for c in _CASES}


def agentic_results(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if r.suite == "agentic"]


def agentic_card(results: list[CheckResult] | None) -> dict[str, Any] | None:
    """The report's card for the suite: counts, failures with reasons, one row per case; None if it did not run."""
    found = agentic_results(results or [])
    if not found:
        return None
    rows = [
        {"case": r.name, "verdict": r.status.upper(), "expected": r.expected or "", "reason": r.reason} for r in found
    ]
    return {
        "title": "Agentic tool calling",
        "source": source_label(any(r.emulated for r in found), rehearsal=any(r.rehearsal for r in found)),
        "cases": len(found),
        "passed": sum(r.status == "pass" for r in found),
        "failed": sum(r.status == "fail" for r in found),
        "skipped": sum(r.status == "skip" for r in found),
        "failures": [row for row in rows if row["verdict"] == "FAIL"],
        "rows": rows,
    }
