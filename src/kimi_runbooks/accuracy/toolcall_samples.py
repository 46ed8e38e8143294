"""A small samples.jsonl for CI, in K2-Vendor-Verifier's request format.

The official 2,000-request file is not redistributable with the project; CI and laptops use this
dozen streamed requests over four tools: some ask for a tool, some must not trigger one. Each
sample also carries the trigger the generator expects, written as a reference results file
(``finish_reason`` per ``data_index``) so the trigger F1 can be exercised. That F1 is against the
generator's expectation, not against Moonshot's official API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..rundir import RunFolder

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City name, e.g. Beijing"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["location"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_web",
            "description": "Search the web and return the top results.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
                },
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "calculate",
            "description": "Evaluate an arithmetic expression.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "send_email",
            "description": "Send an email message to one recipient.",
            "parameters": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
                "required": ["to", "subject", "body"],
            },
        },
    },
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


def ci_samples(model: str = "moonshotai/Kimi-K2.6") -> list[dict[str, Any]]:
    """The requests, one dict per samples.jsonl line (streamed, as the official file is)."""
    by_name = {t["function"]["name"]: t for t in TOOLS}
    out = []
    for i, (text, names, choice, _) in enumerate(PROMPTS):
        tools = [by_name[n] for n in names] if names else TOOLS
        system_role = "_input" if i % 4 == 0 else "system"  # K2VV files use "_input" for system
        req: dict[str, Any] = {
            "model": model,
            "messages": [
                {"role": system_role, "content": "You are a helpful assistant with tools."},
                {"role": "user", "content": text},
            ],
            "tools": tools,
            "stream": True,
            "temperature": 1.0,
            "max_tokens": 2048,
        }
        if choice is not None:
            req["tool_choice"] = choice
        out.append(req)
    return out


def write_ci_samples(
    path: str | Path,
    expected_path: str | Path | None = None,
    model: str = "moonshotai/Kimi-K2.6",
    folder: RunFolder | None = None,
) -> Path:
    """Write samples.jsonl (and, optionally, the generator's expected-trigger results file)."""
    folder = folder or RunFolder(Path(path).parent)
    p = folder.save_text(path, "".join(json.dumps(r) + "\n" for r in ci_samples(model)))
    if expected_path is not None:
        lines = [
            {
                "data_index": i,
                "status": "success",
                "finish_reason": "tool_calls" if trig else "stop",
                "tool_calls_valid": None,
                "source": "kimi_runbooks.accuracy.toolcall_samples (expected trigger, not an official API)",
            }
            for i, (_, _, _, trig) in enumerate(PROMPTS, 1)
        ]
        folder.save_text(expected_path, "".join(json.dumps(r) + "\n" for r in lines))
    return p
