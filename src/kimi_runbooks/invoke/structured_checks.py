"""Structured output and forced tool calls after a tool result: what agent frameworks rely on.

* ``structured_json_schema`` (and ``_stream``): ``response_format`` json_schema, strict, with a
  schema as pydantic writes it (``$defs``/``$ref``, an Optional, an enum, a nested list): the
  content must parse and validate against the schema, after the reasoning (SGLang 0.5.23
  serving_chat.py ``_set_json_grammar_start`` starts the JSON grammar after ``</think>``).
  langchain's ``with_structured_output``, openai-agents' ``output_type`` and pydantic-ai's
  native output send this.
* ``structured_json_object`` (and ``_stream``): ``{"type": "json_object"}``: a JSON object.
* ``required_after_result`` / ``named_after_result``: ``tool_choice`` required or named on the
  turn after a tool result must still produce a valid call (SGLang installs the constraint on
  every such request; pydantic-ai keeps ``required`` with its ``final_result`` tool and loops
  when a server answers text instead).
"""

from __future__ import annotations

import json
from typing import Any

from .checks import _validator_for
from .session import CheckFailed, Recorder, Session

ANSWER_SCHEMA: dict[str, Any] = {
    "$defs": {
        "Kind": {"enum": ["capital", "town"], "title": "Kind", "type": "string"},
        "City": {
            "type": "object",
            "title": "City",
            "additionalProperties": False,
            "required": ["name", "population", "kind"],
            "properties": {
                "name": {"type": "string", "title": "Name"},
                "population": {"type": "integer", "title": "Population"},
                "kind": {"$ref": "#/$defs/Kind"},
            },
        },
    },
    "type": "object",
    "title": "Answer",
    "additionalProperties": False,
    "required": ["cities", "capital", "note"],
    "properties": {
        "cities": {"type": "array", "items": {"$ref": "#/$defs/City"}, "title": "Cities"},
        "capital": {"anyOf": [{"$ref": "#/$defs/City"}, {"type": "null"}]},
        "note": {"type": "string", "title": "Note"},
    },
}
PROMPT = "Name two cities in France and the capital, as JSON."
FINAL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": "final_result", "description": "The final answer", "parameters": ANSWER_SCHEMA},
}
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _schema_errors(schema: dict[str, Any], text: str, what: str) -> list[str]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        return [f"{what} is not JSON ({exc}): {text[:160]!r}"]
    errors = list(_validator_for(schema)(schema).iter_errors(value))
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "(root)"
        return [f"{what} does not match the schema at {where}: {errors[0].message}"[:300]]
    return []


def _structured(
    s: Session, rec: Recorder, response_format: dict[str, Any], schema: dict[str, Any], stream: bool
) -> str:
    body = {**s.body(PROMPT), "response_format": response_format}
    if stream:
        out = rec.stream(body)
        content, reasoning, order, finish = out.content, out.reasoning, out.order, out.finish_reason
    else:
        choice = rec.chat(body)
        content, reasoning, order = choice.message.content or "", getattr(choice.message, "reasoning_content", ""), []
        finish = choice.finish_reason
    problems = _schema_errors(schema, content, "content") if content.strip() else ["content is empty"]
    if finish != "stop":
        problems.append(f"finish_reason {finish!r}, expected 'stop' (a cut document is not valid JSON)")
    if (
        "reasoning" in order
        and "content" in order
        and order.index("content") < len(order) - 1 - order[::-1].index("reasoning")
    ):
        problems.append("reasoning deltas came after the JSON had started (the grammar starts after </think>)")
    if problems:
        raise CheckFailed("; ".join(problems) + f" (response_format {response_format['type']})")
    return f"content valid against the {response_format['type']} schema" + (
        ", after the reasoning" if reasoning else ""
    )


def check_json_schema(s: Session, rec: Recorder, stream: bool = False) -> str:
    fmt = {"type": "json_schema", "json_schema": {"name": "Answer", "schema": ANSWER_SCHEMA, "strict": True}}
    return _structured(s, rec, fmt, ANSWER_SCHEMA, stream)


def check_json_object(s: Session, rec: Recorder, stream: bool = False) -> str:
    return _structured(s, rec, {"type": "json_object"}, {"type": "object"}, stream)


def _history() -> list[dict[str, Any]]:
    call: dict[str, Any] = {"id": "functions.get_weather:0", "type": "function"}
    call["function"] = {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
    return [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": json.dumps({"temp_c": 18})},
    ]


def _forced_after_result(s: Session, rec: Recorder, tool_choice: Any, stream: bool) -> str:
    body = {"model": s.model, "messages": _history(), "max_tokens": s.max_tokens}
    body |= {"tools": [WEATHER_TOOL, FINAL_TOOL], "tool_choice": tool_choice}
    if stream:
        out = rec.stream(body)
        calls = [(c.get("name"), c.get("arguments") or "") for _, c in sorted(out.tool_calls.items())]
        finish = out.finish_reason
    else:
        choice = rec.chat(body)
        calls = [(c.function.name, c.function.arguments or "") for c in choice.message.tool_calls or []]
        finish = choice.finish_reason
    label = tool_choice if isinstance(tool_choice, str) else f"named {tool_choice['function']['name']}"
    if not calls:
        raise CheckFailed(
            f"tool_choice {label} after a tool result, but no tool call came back (finish_reason {finish!r}): SGLang "
            "constrains every such turn to a call; an agent keeping tool_choice (pydantic-ai's final_result) loops"
        )
    problems = []
    wanted = None if isinstance(tool_choice, str) else tool_choice["function"]["name"]
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER_TOOL, FINAL_TOOL)}
    for name, args in calls:
        if wanted and name != wanted:
            problems.append(f"called {name}, but tool_choice names {wanted}")
        elif name not in schemas:
            problems.append(f"called {name}, which is not declared")
        else:
            problems += _schema_errors(schemas[name], args, f"{name}'s arguments")
    if finish != "tool_calls":
        problems.append(f"finish_reason {finish!r}, expected 'tool_calls'")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"tool_choice {label} after a tool result: {[n for n, _ in calls]} called with valid arguments"


def check_required_after_result(s: Session, rec: Recorder, stream: bool = False) -> str:
    return _forced_after_result(s, rec, "required", stream)


def check_named_after_result(s: Session, rec: Recorder, stream: bool = False) -> str:
    return _forced_after_result(s, rec, {"type": "function", "function": {"name": "final_result"}}, stream)


def _streamed(fn: Any) -> Any:
    def run(s: Session, rec: Recorder) -> str:
        return str(fn(s, rec, stream=True))

    return run


STRUCTURED_CHECKS = {
    "structured_json_schema": check_json_schema,
    "structured_json_schema_stream": _streamed(check_json_schema),
    "structured_json_object": check_json_object,
    "structured_json_object_stream": _streamed(check_json_object),
    "required_after_result": check_required_after_result,
    "required_after_result_stream": _streamed(check_required_after_result),
    "named_after_result": check_named_after_result,
    "named_after_result_stream": _streamed(check_named_after_result),
}
