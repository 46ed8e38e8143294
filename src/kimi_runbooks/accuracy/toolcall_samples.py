"""A small samples.jsonl for CI, in K2-Vendor-Verifier's request format.

The official 2,000-request file is not redistributable with the project; CI and laptops use this
dozen streamed single-turn requests over four tools (some ask for a tool, some must not trigger
one) followed by a few multi-turn ones: conversations that already hold tool calls (Kimi ids
``functions.<name>:<idx>``) and their results, as agents send them, like the official file's.
Each sample also carries the trigger the generator expects, written as a reference results file
(``finish_reason`` per ``data_index``) so the trigger F1 can be exercised. That F1 is against the
generator's expectation, not against Moonshot's official API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..invoke.agentic_tools import function_tool
from ..rundir import RunFolder

TOOLS: list[dict[str, Any]] = [
    function_tool(
        "get_weather",
        "Current weather for a city.",
        {
            "location": {"type": "string", "description": "City name, e.g. Beijing"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
        ["location"],
    ),
    function_tool(
        "search_web",
        "Search the web and return the top results.",
        {"query": {"type": "string"}, "max_results": {"type": "integer", "minimum": 1, "maximum": 20}},
        ["query"],
    ),
    function_tool(
        "calculate",
        "Evaluate an arithmetic expression.",
        {"expression": {"type": "string"}},
        ["expression"],
    ),
    function_tool(
        "send_email",
        "Send an email message to one recipient.",
        {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
        ["to", "subject", "body"],
    ),
]

#: (user text, tool subset by name or None for all, tool_choice or None, expected trigger)
PROMPTS: list[tuple[str, list[str] | None, Any, bool]] = [
    ("What is the weather in Beijing right now?", None, None, True),
    ("Search the web for the latest SGLang release notes.", None, None, True),
    ("Please calculate 1234 * 5678 for me.", None, None, True),
    ("Send an email to alice@example.com saying the report is ready.", None, None, True),
    ("Write a two-line poem about autumn leaves.", None, None, False),
    ("Translate 'good morning' into French.", None, None, False),
    ("What is the weather like in Paris this weekend?", ["get_weather", "calculate"], None, True),
    ("Tell me a fun fact about octopuses.", ["search_web"], "none", False),
    ("Summarise the plot of Hamlet in one sentence.", None, None, False),
    ("Search the web for the population of Tokyo.", ["search_web"], "required", True),
    ("How are you today?", ["calculate", "send_email"], None, False),
    (
        "Look up the weather for Nairobi in celsius.",
        None,
        {"type": "function", "function": {"name": "get_weather"}},
        True,
    ),
]


def _call(name: str, index: int, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"functions.{name}:{index}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def _result(name: str, index: int, content: dict[str, Any]) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"functions.{name}:{index}", "content": json.dumps(content)}


_WEATHER_TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris right now?"},
    {"role": "assistant", "content": "", "tool_calls": [_call("get_weather", 0, {"location": "Paris"})]},
    _result("get_weather", 0, {"location": "Paris", "temperature_c": 18, "condition": "clear"}),
]
_TWO_CALLS_TURN: list[dict[str, Any]] = [
    {"role": "user", "content": "Get the weather in Beijing and calculate 12 * 7, at the same time."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            _call("get_weather", 0, {"location": "Beijing"}),
            _call("calculate", 1, {"expression": "12 * 7"}),
        ],
    },
    _result("get_weather", 0, {"location": "Beijing", "temperature_c": 30}),
    _result("calculate", 1, {"result": 84}),
    {"role": "assistant", "content": "Beijing is at 30 C and 12 * 7 = 84."},
]

#: (conversation before the new turn, user text or None when the turn answers a tool result, expected trigger)
MULTI_TURN: list[tuple[list[dict[str, Any]], str | None, bool]] = [
    (_WEATHER_TURN, "Now search the web for things to do in Paris this weekend.", True),
    (_WEATHER_TURN, None, False),
    (_TWO_CALLS_TURN, "Send an email to bob@example.com with that weather summary.", True),
    (_TWO_CALLS_TURN, "Thanks, that is all I needed.", False),
]


def ci_samples(model: str = "moonshotai/Kimi-K2.6", multi_turn: bool = True) -> list[dict[str, Any]]:
    """The requests, one dict per samples.jsonl line (streamed, as the official file is).

    Single-turn samples first (data_index 1..len(PROMPTS)), then, unless multi_turn=False, the
    multi-turn ones; a single-turn sample is the same request either way.
    """
    by_name = {t["function"]["name"]: t for t in TOOLS}
    out = []
    for i, (text, names, choice, _) in enumerate(PROMPTS):
        tools = [by_name[n] for n in names] if names else TOOLS
        system_role = "_input" if i % 4 == 0 else "system"  # K2VV files use "_input" for system
        out.append(_request(model, system_role, [{"role": "user", "content": text}], tools, choice))
    for history, follow_up, _ in MULTI_TURN if multi_turn else []:
        turn = [{"role": "user", "content": follow_up}] if follow_up else []
        out.append(_request(model, "system", [*history, *turn], TOOLS, None))
    return out


def _request(model: str, system_role: str, messages: list[dict[str, Any]], tools: Any, choice: Any) -> dict[str, Any]:
    req: dict[str, Any] = {
        "model": model,
        "messages": [{"role": system_role, "content": "You are a helpful assistant with tools."}, *messages],
        "tools": tools,
        "stream": True,
        "temperature": 1.0,
        "max_tokens": 2048,
    }
    if choice is not None:
        req["tool_choice"] = choice
    return req


def expected_triggers(multi_turn: bool = True) -> list[bool]:
    """The trigger each sample expects, in data_index order."""
    return [p[3] for p in PROMPTS] + ([m[2] for m in MULTI_TURN] if multi_turn else [])


def write_ci_samples(
    path: str | Path,
    expected_path: str | Path | None = None,
    model: str = "moonshotai/Kimi-K2.6",
    folder: RunFolder | None = None,
    multi_turn: bool = True,
) -> Path:
    """Write samples.jsonl (and, optionally, the generator's expected-trigger results file)."""
    folder = folder or RunFolder(Path(path).parent)
    p = folder.save_text(path, "".join(json.dumps(r) + "\n" for r in ci_samples(model, multi_turn)))
    if expected_path is not None:
        lines = [
            {
                "data_index": i,
                "status": "success",
                "finish_reason": "tool_calls" if trig else "stop",
                "tool_calls_valid": None,
                "source": "kimi_runbooks.accuracy.toolcall_samples (expected trigger, not an official API)",
            }
            for i, trig in enumerate(expected_triggers(multi_turn), 1)
        ]
        folder.save_text(expected_path, "".join(json.dumps(r) + "\n" for r in lines))
    return p
