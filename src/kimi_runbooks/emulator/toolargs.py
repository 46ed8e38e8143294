"""Tool-call arguments generated from the tool's JSON schema.

Runbooks validate tool-call arguments against the declared schema (the way
K2-Vendor-Verifier counts schema errors), so the emulator's arguments must be valid
by construction: required properties filled, types, enums, consts, ranges, lengths
and item counts respected, local $refs followed.  Values are plausible for the
property's name (a ``location`` gets a place from the prompt, a ``query`` gets a
search phrase) so a reader of a transcript sees something sensible.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, overload

from .regex_text import text_for

_MAX_DEPTH = 8


@dataclass
class Hints:
    """What the prompt says that argument values can borrow."""

    text: str = ""
    location: str | None = None
    query: str | None = None
    extras: dict[str, str] = field(default_factory=dict)
    document: dict[str, Any] | None = None  # a JSON object the user gave, for a free-form object property


def arguments_for(schema: Any, hints: Hints) -> dict[str, Any]:
    """A JSON object valid against ``schema`` (an object schema); {} if it is unusable."""
    if not isinstance(schema, dict):
        return {}
    try:
        value = _Generator(schema, hints).value(schema, "", 0)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError):
        return {}
    return value if isinstance(value, dict) else {}


def instance_for(schema: Any, hints: Hints) -> Any:
    """A value valid against any JSON schema (structured output's content); {} if it is unusable."""
    if schema is True or schema == {}:
        return {}
    if not isinstance(schema, dict):
        return {}
    try:
        return _Generator(schema, hints).value(schema, "", 0)
    except (RecursionError, ValueError, TypeError, KeyError, IndexError):
        return {}


class _Generator:
    def __init__(self, root: dict[str, Any], hints: Hints) -> None:
        self.root = root
        self.hints = hints

    def value(self, schema: Any, name: str, depth: int) -> Any:
        if not isinstance(schema, dict) or depth > _MAX_DEPTH:
            return None if schema is False else ""
        schema = self._resolve(schema, depth)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self._pick_enum(schema["enum"])
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return self.value(self._first_non_null(options), name, depth + 1)
        if isinstance(schema.get("allOf"), list):
            return self.value(_merge_all_of(schema), name, depth + 1)
        kind = _schema_type(schema)
        maker = {
            "object": self._object,
            "array": self._array,
            "string": self._string,
            "integer": self._integer,
            "number": self._number,
            "boolean": self._boolean,
            "null": _null,
        }.get(kind, self._string)
        return maker(schema, name, depth)

    def _resolve(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            target = target[part.replace("~1", "/").replace("~0", "~")]
        if not isinstance(target, dict):
            raise ValueError(f"unresolvable $ref {ref}")
        return self._resolve(target, depth + 1) if depth < _MAX_DEPTH else target

    def _first_non_null(self, options: list[Any]) -> Any:
        for option in options:
            if isinstance(option, dict) and option.get("type") != "null":
                return option
        return options[0]

    def _pick_enum(self, choices: list[Any]) -> Any:
        text = self.hints.text.lower()
        for choice in choices:
            if isinstance(choice, str) and choice and choice.lower() in text:
                return choice
        return choices[0]

    def _object(self, schema: dict[str, Any], name: str, depth: int) -> dict[str, Any]:
        found = schema.get("properties")
        props: dict[str, Any] = found if isinstance(found, dict) else {}
        if (
            depth > 0
            and not props
            and self.hints.document is not None
            and "required" not in schema
            and schema.get("additionalProperties", True) is not False
        ):
            return dict(self.hints.document)  # the model copies the document it was asked to pass on
        required = (
            [r for r in schema.get("required", []) if isinstance(r, str)]
            if isinstance(schema.get("required"), list)
            else []
        )
        chosen = required or list(props)
        out: dict[str, Any] = {}
        for key in chosen:
            out[key] = self.value(props.get(key, {}), key, depth + 1)
        return out

    def _array(self, schema: dict[str, Any], name: str, depth: int) -> list[Any]:
        low = _int_or(schema.get("minItems"), 0)
        high = _int_or(schema.get("maxItems"), max(low, 1))
        count = max(min(max(low, 1), high), low)
        found = schema.get("prefixItems")
        prefix: list[Any] = found if isinstance(found, list) else []
        items = schema.get("items", {})
        out: list[Any] = []
        for i in range(count):
            item_schema = prefix[i] if i < len(prefix) else items
            item = self.value(item_schema, _singular(name), depth + 1)
            if schema.get("uniqueItems") and item in out:
                item = self._other(item_schema, item, out, i, depth)
                if item in out:  # no distinct value the item schema allows: fewer items
                    break
            out.append(item)
        return out

    def _other(self, schema: Any, item: Any, taken: list[Any], index: int, depth: int) -> Any:
        """A value for a uniqueItems array not in ``taken``, still valid for the item schema: the next
        unused enum member, else the item varied (a string suffixed, a number moved) within its
        bounds, pattern and length."""
        resolved = self._resolve(schema, depth) if isinstance(schema, dict) else {}
        choices = resolved.get("enum")
        if isinstance(choices, list):
            return next((c for c in choices if c not in taken), item)
        if "const" in resolved:
            return item
        for step in range(index, index + 16):
            candidate = _vary(item, step)
            if candidate not in taken and _fits(candidate, resolved):
                return candidate
        return item

    def _string(self, schema: dict[str, Any], name: str, depth: int) -> str:
        text = _format_value(schema.get("format")) or self._named_string(name)
        low = _int_or(schema.get("minLength"), 0)
        high = _int_or(schema.get("maxLength"), None)
        if len(text) < low:
            text = text.ljust(low, "x")
        if high is not None:
            text = text[:high]
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and not _full_match(pattern, text):
            text = text_for(pattern) or _pattern_fallback(pattern, text)
        return text

    def _named_string(self, name: str) -> str:
        key = name.lower()
        h = self.hints
        if key in h.extras:
            return h.extras[key]
        rules: list[tuple[tuple[str, ...], str]] = [
            (("location", "city", "place", "address", "destination", "region", "town"), h.location or "Paris"),
            (
                ("query", "search", "keyword", "term", "question", "prompt", "q"),
                h.query or _phrase(h.text) or "example",
            ),
            (("date", "day"), "2025-06-01"),
            (("time",), "12:00"),
            (("email", "mail"), "user@example.com"),
            (("url", "link", "uri", "website"), "https://example.com"),
            (("unit",), "celsius"),
            (("currency",), "USD"),
            (("country",), "China"),
            (("lang", "language", "locale"), "en"),
            (("name", "title"), _phrase(h.text, 3) or "example"),
            (("id", "identifier", "sku"), "item-001"),
            (("phone",), "+1-555-0100"),
            (("color", "colour"), "blue"),
        ]
        for needles, value in rules:
            if key in needles or any(n in key.split("_") for n in needles if len(n) > 2):
                return value
        return _phrase(h.text) or "example"

    def _integer(self, schema: dict[str, Any], name: str, depth: int) -> int:
        low, high = _bounds(schema, integer=True)
        preferred = 5 if re.search(r"count|limit|num|max|top|size|results", name.lower()) else 1
        value = int(_clip(preferred, low, high))
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0 and value % step:
            value = int(math.ceil(value / step) * step)
            if high is not None and value > high:
                value -= step
        return value

    def _number(self, schema: dict[str, Any], name: str, depth: int) -> float:
        low, high = _bounds(schema, integer=False)
        value = float(_clip(1.0, low, high))
        step = schema.get("multipleOf")
        if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
            value = math.ceil(value / step) * step
        return value

    def _boolean(self, schema: dict[str, Any], name: str, depth: int) -> bool:
        default = schema.get("default")
        return default if isinstance(default, bool) else True


def _schema_type(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _merge_all_of(schema: dict[str, Any]) -> dict[str, Any]:
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    props: dict[str, Any] = dict(merged.get("properties") or {})
    required: list[str] = list(merged.get("required") or [])
    for part in schema["allOf"]:
        if isinstance(part, dict):
            props.update(part.get("properties") or {})
            required += [r for r in part.get("required") or [] if r not in required]
            for key, val in part.items():
                if key not in ("properties", "required"):
                    merged.setdefault(key, val)
    if props:
        merged["properties"] = props
    if required:
        merged["required"] = required
    return merged


def _bounds(schema: dict[str, Any], integer: bool) -> tuple[float | None, float | None]:
    def num(key: str) -> float | None:
        value = schema.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    low, high = num("minimum"), num("maximum")
    ex_low, ex_high = num("exclusiveMinimum"), num("exclusiveMaximum")
    nudge = 1 if integer else 1e-6
    if ex_low is not None:
        low = max(low, ex_low + nudge) if low is not None else ex_low + nudge
    if ex_high is not None:
        high = min(high, ex_high - nudge) if high is not None else ex_high - nudge
    if integer:
        low = math.ceil(low) if low is not None else None
        high = math.floor(high) if high is not None else None
    return low, high


def _clip(value: float, low: float | None, high: float | None) -> float:
    if low is not None and value < low:
        value = low
    if high is not None and value > high:
        value = high
    return value


def _null(schema: dict[str, Any], name: str, depth: int) -> None:
    return None


@overload
def _int_or(value: Any, default: int) -> int: ...
@overload
def _int_or(value: Any, default: None) -> int | None: ...
def _int_or(value: Any, default: int | None) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _format_value(fmt: Any) -> str | None:
    return (
        {
            "date": "2025-06-01",
            "date-time": "2025-06-01T12:00:00Z",
            "time": "12:00:00",
            "email": "user@example.com",
            "uri": "https://example.com",
            "url": "https://example.com",
            "uuid": "123e4567-e89b-12d3-a456-426614174000",
            "ipv4": "192.0.2.1",
            "hostname": "example.com",
        }.get(fmt)
        if isinstance(fmt, str)
        else None
    )


def _full_match(pattern: str, text: str) -> bool:
    """The whole string matches (xgrammar holds a pattern to the whole value, JSON Schema to a part)."""
    try:
        return re.fullmatch(pattern, text) is not None
    except re.error:
        return True


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    """A varied array item still within its schema's bounds, lengths and pattern."""
    if isinstance(value, str):
        pattern = schema.get("pattern")
        high = _int_or(schema.get("maxLength"), None)
        return (high is None or len(value) <= high) and (not isinstance(pattern, str) or _full_match(pattern, value))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, top = _bounds(schema, integer=isinstance(value, int))
        return (low is None or value >= low) and (top is None or value <= top)
    return True


def _matches(pattern: str, text: str) -> bool:
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return True


def _pattern_fallback(pattern: str, text: str) -> str:
    """Cheap candidates for common patterns; the original text when none fits."""
    for candidate in ("2025-06-01", "12:00", "ABC", "abc", "123", "a1", "A", "a", "1", "item-001"):
        if _matches(pattern, candidate):
            return candidate
    return text


_STOP = {
    "the",
    "a",
    "an",
    "is",
    "are",
    "what",
    "what's",
    "whats",
    "of",
    "in",
    "for",
    "to",
    "and",
    "please",
    "me",
    "can",
    "you",
    "how",
    "i",
    "it",
    "this",
    "that",
    "find",
    "show",
    "tell",
}


def _phrase(text: str, max_words: int = 6) -> str:
    words = [w for w in re.findall(r"[\w'-]+", text) if w.lower() not in _STOP]
    return " ".join(words[:max_words])


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 3 else name


def _vary(item: Any, index: int) -> Any:
    if isinstance(item, str):
        return f"{item} {index + 1}"
    if isinstance(item, (int, float)) and not isinstance(item, bool):
        return item + index
    return item
