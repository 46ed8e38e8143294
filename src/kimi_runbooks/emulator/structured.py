"""Structured output: ``response_format`` accepted, refused and honoured as SGLang 0.5.23 does.

What SGLang does with ``--reasoning-parser kimi_k2 --tool-call-parser kimi_k2``
(sglang/srt/entrypoints/openai/protocol.py, serving_chat.py):

* the request model takes ``response_format`` as ``ResponseFormat`` (``type`` text, json_object
  or json_schema, ``json_schema`` {name, description, schema, strict: StrictBool}),
  ``LegacyStructuralTagResponseFormat`` (structures/triggers/at_least_one) or xgrammar's
  ``StructuralTag`` ({type: structural_tag, format}); anything else fails validation (a 400);
* ``set_json_schema`` (a before-validator) lifts a bare ``{"type": "json_schema", "schema": S}``
  into ``json_schema`` {name: S.title or "Schema", schema: S, strict};
* ``_validate_request``: "schema_ is required for json_schema response format request." when a
  json_schema format has no schema, after the tool_choice checks below;
* ``to_sampling_params``: json_schema (strict or not: the kimi_k2 chat template does not render
  response_format, so strict=false is constrained too) and json_object (``{"type": "object"}``)
  become a JSON-schema constraint; structural_tag becomes a structural-tag constraint; combined
  with tool_choice required or named it is a ValueError, answered 400;
* ``_set_json_grammar_start``: the JSON grammar starts after the reasoning (the kimi_k2 parser's
  ``</think>`` encodes to token ids), so reasoning comes first, and the tool-call parser is off
  for that request (``_response_parser_json_response_format``): content is the JSON document.

The emulated model writes a JSON instance of the schema (toolargs.py: objects, required keys,
types, enums, consts, arrays, nesting, ``$defs``/``$ref``); a structural tag gets text made from
its format (const strings, tags, sequences, JSON schemas, triggered tags). Not covered: the
``regex``, ``grammar`` and dispatch formats inside a structural tag get plain text, which a real
grammar would not have allowed.
"""

from __future__ import annotations

import json
import random
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from .content import Reply, filler_text, hints_from, topic_of
from .conversation import Conversation
from .error_answers import ApiError
from .toolargs import Hints, instance_for


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class JsonSchemaResponseFormat(_Loose):
    name: str
    description: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: StrictBool | None = None


class ResponseFormat(_Loose):
    type: Literal["text", "json_object", "json_schema"]
    json_schema: JsonSchemaResponseFormat | None = None


class StructuresResponseFormat(_Loose):
    begin: str
    schema_: dict[str, Any] | None = Field(default=None, alias="schema")
    end: str


class LegacyStructuralTagResponseFormat(_Loose):
    type: Literal["structural_tag"]
    structures: list[StructuresResponseFormat]
    triggers: list[str]
    at_least_one: bool = False


# xgrammar 0.2.7 structural_tag.py: each format's type and the fields it requires.
FORMAT_FIELDS: dict[str, tuple[str, ...]] = {
    "any_text": (),
    "any_tokens": (),
    "const_string": ("value",),
    "dispatch": ("rules",),
    "exclude_token": (),
    "grammar": ("grammar",),
    "json_schema": ("json_schema",),
    "optional": ("content",),
    "or": ("elements",),
    "plus": ("content",),
    "qwen_xml_parameter": ("json_schema",),
    "regex": ("pattern",),
    "repeat": ("min", "max", "content"),
    "sequence": ("elements",),
    "star": ("content",),
    "tag": ("begin", "content", "end"),
    "tags_with_separator": ("tags", "separator"),
    "token": ("token",),
    "token_dispatch": ("rules",),
    "token_triggered_tags": ("trigger_tokens", "tags"),
    "triggered_tags": ("triggers", "tags"),
}


def _check_format(fmt: Any, where: str = "format") -> None:
    if not isinstance(fmt, dict):
        raise ValueError(f"{where} must be an object")
    kind = fmt.get("type")
    if kind not in FORMAT_FIELDS:
        raise ValueError(f"{where}.type must be one of {sorted(FORMAT_FIELDS)}, not {kind!r}")
    missing = [f for f in FORMAT_FIELDS[kind] if f not in fmt]
    if missing:
        raise ValueError(f"{where} ({kind}) needs {missing}")
    if "content" in fmt:
        _check_format(fmt["content"], f"{where}.content")
    for key in ("elements", "tags"):
        items = fmt.get(key, [])
        if not isinstance(items, list):
            raise ValueError(f"{where}.{key} must be a list")
        for i, item in enumerate(items):
            _check_format(
                {"type": "tag", **item} if key == "tags" and isinstance(item, dict) else item, f"{where}.{key}.{i}"
            )


class StructuralTag(_Loose):
    """xgrammar's StructuralTag: ``{"type": "structural_tag", "format": {...}}`` (type may be left out)."""

    type: Literal["structural_tag"] = "structural_tag"
    format: dict[str, Any]

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_format(value)
        return value


AnyResponseFormat = ResponseFormat | LegacyStructuralTagResponseFormat | StructuralTag


def lift_json_schema(values: Any) -> Any:
    """protocol.py ``ChatCompletionRequest.set_json_schema``: a bare top-level schema becomes json_schema."""
    if not isinstance(values, dict):
        return values
    response_format = values.get("response_format")
    if not response_format or not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return values
    schema = response_format.pop("schema", None)
    if response_format.get("json_schema"):
        return values
    if schema and isinstance(schema, dict):
        strict = None
        props = schema.get("properties")
        if isinstance(props, dict) and "strict" in props:
            item = props.pop("strict", None)
            strict = bool(item and isinstance(item, dict) and item.get("default", False))
        response_format["json_schema"] = {"name": schema.get("title", "Schema"), "schema": schema, "strict": strict}
    return values


# ---------------------------------------------------------------- refusals


def check_tool_choice(tools: list[Any], tool_choice: Any) -> None:
    """serving_chat.py ``_validate_request``: tool_choice required/named needs the tools it names."""
    if isinstance(tool_choice, str) and tool_choice.lower() == "required" and not tools:
        raise ApiError("Tools cannot be empty if tool choice is set to required.")
    if tool_choice is not None and not isinstance(tool_choice, str):
        if not tools:
            raise ApiError("Tools cannot be empty if tool choice is set to a specific tool.")
        name = tool_choice.function.name
        if not any(t.function.name == name for t in tools):
            raise ApiError(f"Tool '{name}' not found in tools list.")


def check_response_format(response_format: AnyResponseFormat | None) -> None:
    """serving_chat.py ``_validate_request``, its last check."""
    if isinstance(response_format, ResponseFormat) and response_format.type == "json_schema":
        if response_format.json_schema is None or response_format.json_schema.schema_ is None:
            raise ApiError("schema_ is required for json_schema response format request.")


CONFLICT = (
    "tool_choice 'required' or a named tool cannot be combined with "
    "response_format, regex, or ebnf: the tool-call constraint and the "
    "output constraint cannot both be honored."
)


def check_constraints(response_format: AnyResponseFormat | None, tools: list[Any], tool_choice: Any) -> None:
    """protocol.py ``to_sampling_params``: a forced tool call and an output constraint cannot both hold."""
    forced = tool_choice == "required" or (tool_choice is not None and not isinstance(tool_choice, str))
    if forced and tools and output_constrained(response_format):
        raise ApiError(CONFLICT, err_type="BadRequest")  # serving_base.py: a ValueError is a 400 "BadRequest"


def output_constrained(response_format: AnyResponseFormat | None) -> bool:
    return response_format is not None and not (
        isinstance(response_format, ResponseFormat) and response_format.type == "text"
    )


def json_answer(response_format: AnyResponseFormat | None) -> bool:
    """The request's content is a JSON document (json_schema or json_object): the tool parser is off."""
    return isinstance(response_format, ResponseFormat) and response_format.type in ("json_schema", "json_object")


# ---------------------------------------------------------------- the reply


def schema_of(response_format: AnyResponseFormat) -> dict[str, Any] | None:
    """The JSON schema the content must satisfy (json_object: any object); None for a structural tag."""
    if isinstance(response_format, ResponseFormat):
        if response_format.type == "json_object":
            return {"type": "object"}
        if response_format.type == "json_schema" and response_format.json_schema is not None:
            return response_format.json_schema.schema_
    return None


def structured_reply(
    reply: Reply, response_format: AnyResponseFormat, convo: Conversation, rng: random.Random
) -> Reply:
    """The reply under an output constraint: reasoning first, then content the constraint admits."""
    if not output_constrained(response_format):
        return reply
    hints = hints_from(convo)
    if isinstance(response_format, ResponseFormat):
        schema = schema_of(response_format) or {"type": "object"}
        name = response_format.json_schema.name if response_format.json_schema else "a JSON object"
        content = json.dumps(_json_value(schema, hints, convo), ensure_ascii=False)
        reasoning = (
            f'The user wrote: "{topic_of(convo.last_user_text)}". The answer must be JSON matching {name}, '
            "so I fill in each field from the request."
        )
        return Reply(reasoning=reasoning, content=content)
    text = (
        _legacy_text(response_format, hints, rng)
        if isinstance(response_format, LegacyStructuralTagResponseFormat)
        else _format_text(response_format.format, hints, rng)
    )
    reasoning = "The answer has to follow the requested structure, so I write it in that form."
    return Reply(reasoning=reasoning, content=text)


def _json_value(schema: dict[str, Any], hints: Hints, convo: Conversation) -> Any:
    value = instance_for(schema, hints)
    if value == {} and schema == {"type": "object"}:  # json_object: an object that answers
        return {"answer": f"Emulated answer about: {topic_of(convo.last_user_text)}"}
    return value


def _legacy_text(fmt: LegacyStructuralTagResponseFormat, hints: Hints, rng: random.Random) -> str:
    if fmt.at_least_one and fmt.structures:
        first = fmt.structures[0]
        return first.begin + json.dumps(instance_for(first.schema_ or {}, hints), ensure_ascii=False) + first.end
    return filler_text(rng, 1)


def _format_text(fmt: dict[str, Any], hints: Hints, rng: random.Random, depth: int = 0) -> str:
    kind = fmt.get("type")
    if depth > 16:
        return ""
    if kind == "const_string":
        return str(fmt.get("value", ""))
    if kind in ("json_schema", "qwen_xml_parameter"):
        schema = fmt.get("json_schema")
        return json.dumps(instance_for(schema if isinstance(schema, dict) else {}, hints), ensure_ascii=False)
    if kind == "tag":
        end = fmt.get("end")
        end = end[0] if isinstance(end, list) and end else end
        return (
            _literal(fmt.get("begin")) + _format_text(fmt.get("content") or {}, hints, rng, depth + 1) + _literal(end)
        )
    if kind == "sequence":
        return "".join(_format_text(e, hints, rng, depth + 1) for e in fmt.get("elements") or [])
    if kind == "or":
        elements = fmt.get("elements") or []
        return _format_text(elements[0], hints, rng, depth + 1) if elements else ""
    if kind in ("plus", "repeat"):
        times = max(int(fmt.get("min", 1)), 1) if kind == "repeat" else 1
        return "".join(_format_text(fmt.get("content") or {}, hints, rng, depth + 1) for _ in range(times))
    if kind in ("optional", "star"):
        return ""
    if kind in ("triggered_tags", "tags_with_separator", "token_triggered_tags"):
        tags = fmt.get("tags") or []
        if fmt.get("at_least_one") and tags:
            return _format_text({"type": "tag", **tags[0]}, hints, rng, depth + 1)
        return filler_text(rng, 1) if kind == "triggered_tags" else ""
    return filler_text(rng, 1)  # any_text and the formats the emulator cannot generate (see above)


def _literal(value: Any) -> str:
    if isinstance(value, dict):  # a TokenFormat: the token's text when given as a string
        token = value.get("token")
        return token if isinstance(token, str) else ""
    return value if isinstance(value, str) else ""
