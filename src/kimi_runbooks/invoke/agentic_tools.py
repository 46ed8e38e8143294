"""The agentic suite's script: tools, canned tool results and prompts, written for this project.

Prompts name the tools they want and say how to call them, so a real Kimi model and the
emulator (whose tool policy is emulator/toolplan.py) both have one right answer. Canned results
carry a value the next call must reuse (the restaurant), and facts the final answer must state.
"""

from __future__ import annotations

import json
from typing import Any


def function_tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


GET_WEATHER = function_tool(
    "get_weather",
    "Get the current weather for a city",
    {
        "location": {"type": "string", "minLength": 1, "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    ["location"],
)
GET_TIME = function_tool(
    "get_time",
    "Get the local time in a city",
    {"city": {"type": "string", "minLength": 1}},
    ["city"],
)
SEARCH_PLACES = function_tool(
    "search_places",
    "Search for places such as restaurants or museums in a city",
    {
        "query": {"type": "string", "minLength": 1},
        "location": {"type": "string"},
    },
    ["query"],
)
BOOK_TABLE = function_tool(
    "book_table",
    "Book a table at a restaurant",
    {
        "restaurant": {"type": "string", "minLength": 1},
        "party_size": {"type": "integer", "minimum": 1, "maximum": 20},
        "time": {"type": "string"},
    },
    ["restaurant", "party_size"],
)
SAVE_DOCUMENT = function_tool(
    "save_document",
    "Save a JSON document to a file",
    {
        "path": {"type": "string", "minLength": 1},
        "document": {"type": "object", "description": "the JSON document to save, unchanged"},
    },
    ["path", "document"],
)
HYPHEN_NAME, DECOY_NAME = "geo-lookup_v2", "geo_lookup-v1"
GEO_LOOKUP = function_tool(HYPHEN_NAME, "Look up the coordinates of a city", {"city": {"type": "string"}}, ["city"])
GEO_LOOKUP_OLD = function_tool(DECOY_NAME, "Deprecated, do not use", {"city": {"type": "string"}}, ["city"])
SERVER_TIME: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_server_time",
        "description": "Get the server's current time; takes no arguments",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}

RESTAURANT = "Le Petit Zinc"
RESULTS: dict[str, dict[str, Any]] = {
    "get_weather": {"location": "Paris", "forecast": "clear", "temperature_c": 18},
    "get_time": {"city": "Tokyo", "time": "21:05"},
    "search_places": {"restaurant": RESTAURANT, "address": "11 Rue Saint-Benoit"},
    "book_table": {"confirmation": "BK-2207", "restaurant": RESTAURANT},
    "save_document": {"saved": True},
    HYPHEN_NAME: {"lat": 48.8566, "lon": 2.3522},
    DECOY_NAME: {"error": "deprecated"},
    "get_server_time": {"time": "2026-01-01T12:00:00Z"},
}
FACTS: dict[str, tuple[str, ...]] = {  # what an answer that used the result mentions (any one)
    "get_weather": ("18", "clear"),
    "get_time": ("21:05", "9:05"),
    "book_table": ("BK-2207", RESTAURANT),
}


def result_for(name: str) -> str:
    return json.dumps(RESULTS.get(name, {"ok": True}))


MULTI_TURN_TOOLS = [GET_WEATHER, SEARCH_PLACES, BOOK_TABLE]
MULTI_TURN_PROMPT = (
    "Plan my evening in Paris step by step, one tool at a time, waiting for each result. "
    "First check the weather in Paris with get_weather. "
    "Then use search_places to search for a restaurant for dinner in Paris. "
    "Then use book_table to book a table for 2 people at 19:30 at the restaurant search_places "
    "returned. Finally tell me the plan in two sentences."
)
PARALLEL_TOOLS = [GET_WEATHER, GET_TIME]
PARALLEL_PROMPT = (
    "At the same time, check the weather in Paris with get_weather and the local time in Tokyo "
    "with get_time: call both tools in parallel, in one turn, then answer in one sentence."
)
WEATHER_PROMPT = "What's the weather like in Paris right now? Use get_weather."
NAMES_PROMPT = f"Find the coordinates of Paris with the tool {HYPHEN_NAME} (not the deprecated {DECOY_NAME})."
NO_PARAMS_PROMPT = "What time is it on the server? Call get_server_time to find out."
NO_TOOL_PROMPT = "Reply with the single word: ready."
HELLO_PROMPT = "Say hello to the team in one short sentence."

# Several KB of JSON with nested objects, unicode, escaped quotes, backslashes and newlines.
LONG_DOCUMENT: dict[str, Any] = {
    "title": 'Quarterly review "Q3" — Réunion trimestrielle',
    "owner": {"name": "Zoë Ångström", "team": "Plateforme/推理", "contact": {"email": "zoe@example.com"}},
    "sections": [
        {
            "id": i,
            "heading": f'Section {i}: naïve café, «quotes» and "escaped" quotes',
            "body": f"Line one of {i}.\nLine two with a backslash \\ and a tab\tand emoji 🚀.",
            "metrics": {"latency_ms": 12.5 + i, "ok": i % 2 == 0, "tags": ["kimi", "sglang", f"s{i}"]},
        }
        for i in range(16)
    ],
    "notes": None,
}
DOCUMENT_PATH = "notes/q3-review.json"


def long_arguments_prompt() -> str:
    text = json.dumps(LONG_DOCUMENT, ensure_ascii=False, indent=1)
    return (
        f'Call save_document once, with path "{DOCUMENT_PATH}" and document exactly the JSON object '
        f"below, unchanged (same keys, values, unicode and escapes):\n```json\n{text}\n```"
    )
