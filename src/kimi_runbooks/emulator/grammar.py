"""The JSON schemas SGLang 0.5.23's grammar backend refuses, and how the refusal reaches a client.

SGLang compiles a json_schema constraint (chat and completions ``response_format``, /generate
``sampling_params.json_schema``) in the scheduler with xgrammar (constrained/xgrammar_backend.py
``dispatch_json``). Two things make it fail, and the request is then aborted with
"Failed to compile json grammar: <reason>" (constrained/grammar_manager.py):

* constrained/json_schema_validation.py ``validate_xgrammar_json_schema`` (ported below, same walk,
  same messages): a keyword xgrammar would ignore (uniqueItems, multipleOf, contains, if/then/else,
  not, dependent*, min/maxContains), a string format it does not implement, or two string
  constraints it cannot enforce together (format, pattern, minLength/maxLength);
* xgrammar's own converter: a ``type`` it does not know (json_schema_converter.cc:
  ``Unsupported type "strin"``; the emulator's message leaves out the C++ source location xgrammar
  prefixes it with).

The client then sees a 400 ErrorResponse (chat, completions), ``{"error": {"message"}}`` (/generate),
or, when streaming chat, HTTP 200 with one error event (type ``BAD_REQUEST``) and ``[DONE]``.
Seen against a real SGLang 0.5.23 server (tests/contract/test_live_differential.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

FAILED = "Failed to compile json grammar: {}"
JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "null", "object", "array"})

_SINGLE_SUBSCHEMA_KEYWORDS = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "contentSchema",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SUBSCHEMA_ARRAY_KEYWORDS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAP_KEYWORDS = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties")
XGRAMMAR_UNSUPPORTED_KEYWORDS = frozenset(
    {
        "contains",
        "dependentRequired",
        "dependentSchemas",
        "else",
        "if",
        "maxContains",
        "minContains",
        "multipleOf",
        "not",
        "then",
        "uniqueItems",
    }
)
XGRAMMAR_STRING_FORMATS = frozenset(
    {
        "date",
        "date-time",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "json-pointer",
        "relative-json-pointer",
        "time",
        "uri",
        "uri-reference",
        "uri-template",
        "uuid",
    }
)


def _escape(value: str) -> str:
    return value.replace("~", "~0").replace("/", "~1")


def subschemas(schema: Any, pointer: str = "#") -> Iterator[tuple[dict[str, Any], str]]:
    """Every schema-bearing place of ``schema`` with its JSON pointer (json_schema_validation.py)."""
    if not isinstance(schema, dict):
        return
    yield schema, pointer
    for keyword in _SINGLE_SUBSCHEMA_KEYWORDS:
        child = schema.get(keyword)
        if isinstance(child, (bool, dict)):
            yield from subschemas(child, f"{pointer}/{keyword}")
        elif keyword == "items" and isinstance(child, list):
            for index, item in enumerate(child):
                yield from subschemas(item, f"{pointer}/{keyword}/{index}")
    for keyword in _SUBSCHEMA_ARRAY_KEYWORDS:
        children = schema.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                yield from subschemas(child, f"{pointer}/{keyword}/{index}")
    for keyword in _SUBSCHEMA_MAP_KEYWORDS:
        mapping = schema.get(keyword)
        if isinstance(mapping, dict):
            for name, child in mapping.items():
                yield from subschemas(child, f"{pointer}/{keyword}/{_escape(name)}")
    dependencies = schema.get("dependencies")
    if isinstance(dependencies, dict):
        for name, child in dependencies.items():
            if isinstance(child, (bool, dict)):
                yield from subschemas(child, f"{pointer}/dependencies/{_escape(name)}")


def _describes_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind is None or kind == "string" or (isinstance(kind, list) and "string" in kind)


def _string_groups(schema: dict[str, Any]) -> list[str]:
    groups = []
    if "format" in schema:
        groups.append("format")
    if "pattern" in schema:
        groups.append("pattern")
    if "minLength" in schema or "maxLength" in schema:
        groups.append("minLength/maxLength")
    return groups


def xgrammar_problem(schema: Any) -> str | None:
    """Why SGLang's xgrammar backend would not compile ``schema`` (None: it compiles)."""
    for sub, pointer in subschemas(schema):
        where = f"JSON Schema at {pointer} is not supported by xgrammar"
        unsupported = sorted(XGRAMMAR_UNSUPPORTED_KEYWORDS.intersection(sub))
        if unsupported:
            return f"{where}: keyword(s) {', '.join(unsupported)} would be ignored"
        if _describes_string(sub) and "format" in sub:
            name = sub["format"]
            if not isinstance(name, str) or name not in XGRAMMAR_STRING_FORMATS:
                return f"{where}: string format {name!r} is not implemented"
        groups = _string_groups(sub) if _describes_string(sub) else []
        if len(groups) > 1:
            return f"{where}: constraints {', '.join(groups)} cannot be enforced together"
    for sub, _ in subschemas(schema):
        kinds = sub.get("type")
        for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
            if not isinstance(kind, str) or kind not in JSON_TYPES:
                return f"Unsupported type {json.dumps(kind)}"
    return None


def grammar_failure(schema: Any) -> str | None:
    """The abort message a request constrained by ``schema`` gets, or None when it compiles."""
    problem = xgrammar_problem(schema)
    return FAILED.format(problem) if problem else None


def json_text_failure(text: str) -> str | None:
    """/generate's ``sampling_params.json_schema`` is a string: not JSON fails to compile too."""
    try:
        schema = json.loads(text)
    except ValueError as exc:
        return FAILED.format(str(exc))
    return grammar_failure(schema)
