"""What the live differential suite compares, as data: JSON shapes, SSE framing, metric families.

test_live_differential.py sends the same requests to the emulator and to real SGLang 0.5.23 on the
CPU (launcher sglang-cpu, tiny random-weight checkpoint) and turns every disagreement into a
``Difference``: where it is (surface, case, JSON path or metric name) and what each side had.
Values the two servers cannot share (ids, timestamps, token counts of two different tokenizers, the
text a random model writes) are compared as shapes: JSON key sets and value types, recursively.
A difference is allowed only when an entry of the test module's DECLARED table matches it
(``Declared``: fnmatch patterns over surface, case and where, with the reason it is allowed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

HOP_HEADERS = frozenset({"date", "server", "content-length", "transfer-encoding", "connection"})


@dataclass(frozen=True)
class Difference:
    surface: str
    case: str
    where: str
    emulator: str
    sglang: str

    def line(self) -> str:
        return f"[{self.surface}] {self.case}: {self.where}: emulator={self.emulator} sglang={self.sglang}"


@dataclass(frozen=True)
class Declared:
    """An allowed difference: surface/case/where are fnmatch patterns; what says what differs."""

    surface: str
    case: str
    where: str
    what: str
    reason: str

    def matches(self, d: Difference) -> bool:
        return (
            fnmatchcase(d.surface, self.surface) and fnmatchcase(d.case, self.case) and fnmatchcase(d.where, self.where)
        )

    def line(self) -> str:
        return f"[{self.surface}] {self.case}: {self.where}: {self.what} -- {self.reason}"


# ---------------------------------------------------------------- JSON shapes


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list):
        return "array"
    return "object"


def shape(value: Any) -> Any:
    """Keys and types, recursively; a list's shape merges its elements' shapes ([] when empty)."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = merge(merged, shape(item))
        return [merged] if value else []
    return frozenset({type_name(value)})


def merge(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: merge(a.get(k), b.get(k)) if k in a and k in b else a.get(k, b.get(k)) for k in {**a, **b}}
    if isinstance(a, list) and isinstance(b, list):
        if not a or not b:
            return a or b
        return [merge(a[0], b[0])]
    if isinstance(a, frozenset) and isinstance(b, frozenset):
        return a | b
    return frozenset({describe(a), describe(b)})


def describe(s: Any) -> str:
    if isinstance(s, dict):
        return "object"
    if isinstance(s, list):
        return "array"
    if isinstance(s, frozenset):
        return "|".join(sorted(s))
    return "<absent>" if s is None else str(s)


NULL = frozenset({"null"})


def shape_diff(
    emulator: Any, sglang: Any, where: str = "$", *, null_matches: bool = False
) -> list[tuple[str, str, str]]:
    """(path, emulator, sglang) where the two shapes differ: a key only one side has, or another type.
    An empty list on one side is no difference (its element shape is unknown). ``null_matches``: a
    null on either side matches any type (configuration values, unset until a platform resolves them)."""
    out: list[tuple[str, str, str]] = []
    if null_matches and (emulator == NULL or sglang == NULL):
        return out
    if isinstance(emulator, dict) and isinstance(sglang, dict):
        for key in sorted(set(emulator) | set(sglang)):
            path = f"{where}.{key}"
            if key not in emulator:
                out.append((path, "<absent>", describe(sglang[key])))
            elif key not in sglang:
                out.append((path, describe(emulator[key]), "<absent>"))
            else:
                out += shape_diff(emulator[key], sglang[key], path, null_matches=null_matches)
        return out
    if isinstance(emulator, list) and isinstance(sglang, list):
        if emulator and sglang:
            out += shape_diff(emulator[0], sglang[0], where + "[]", null_matches=null_matches)
        return out
    if isinstance(emulator, frozenset) and isinstance(sglang, frozenset):
        if emulator != sglang:
            out.append((where, describe(emulator), describe(sglang)))
        return out
    out.append((where, describe(emulator), describe(sglang)))
    return out


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


# ---------------------------------------------------------------- SSE


@dataclass
class Sse:
    """A streamed answer: its framing problems and its payloads (``[DONE]`` kept as the string)."""

    framing: list[str]
    payloads: list[Any]


def read_sse(text: str) -> Sse:
    problems: list[str] = []
    payloads: list[Any] = []
    if not text.endswith("\n\n"):
        problems.append("body does not end with a blank line")
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        lines = block.split("\n")
        data = [ln for ln in lines if ln.startswith("data: ")]
        others = [ln for ln in lines if not ln.startswith("data: ")]
        if others:
            problems.append(f"non-data line {others[0][:40]!r}")
        if len(data) != 1:
            problems.append(f"{len(data)} data lines in one event")
        for ln in data:
            raw = ln[len("data: ") :]
            payloads.append(raw if raw == "[DONE]" else parse_json(raw))
    if not payloads or payloads[-1] != "[DONE]":
        problems.append("last event is not data: [DONE]")
    if payloads.count("[DONE]") > 1:
        problems.append("more than one [DONE]")
    return Sse(problems, payloads)


def chunk_kind(chunk: Any) -> str:
    """What a chat or completions chunk carries: role, reasoning, content, tool_call, finish, usage, error, ..."""
    if not isinstance(chunk, dict):
        return "text"
    if "error" in chunk:
        return "error"
    choices = chunk.get("choices")
    if isinstance(choices, list) and not choices:
        return "sglext" if chunk.get("sglext") is not None and chunk.get("usage") is None else "usage"
    if not isinstance(choices, list):
        return "native"
    choice = choices[0] if isinstance(choices[0], dict) else {}
    if choice.get("finish_reason") is not None:
        return "finish"
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return "text"
    if delta.get("role"):
        return "role"
    if delta.get("tool_calls"):
        return "tool_call"
    if delta.get("reasoning_content"):
        return "reasoning"
    return "content"


def kinds_shapes(payloads: list[Any]) -> dict[str, Any]:
    """Each kind of chunk with the merged shape of its chunks; ``first``/``last`` the first and last JSON chunk."""
    chunks = [p for p in payloads if p != "[DONE]"]
    out: dict[str, Any] = {}
    for chunk in chunks:
        kind = chunk_kind(chunk)
        out[kind] = merge(out.get(kind), shape(chunk))
    if chunks:
        out["first"] = shape(chunks[0])
        out["last"] = shape(chunks[-1])
    return out


# ---------------------------------------------------------------- Prometheus

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="')
_SUFFIXES = ("_bucket", "_sum", "_count", "_created", "_total")


def metric_families(text: str) -> dict[str, set[frozenset[str]]]:
    """Family name -> the label-name sets its samples carry (``le``/``quantile`` left out)."""
    types: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            types[name] = kind
    out: dict[str, set[frozenset[str]]] = {name: set() for name in types}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if not m or line.startswith("#"):
            continue
        name = m.group(1)
        family = name
        if family not in types:
            for suffix in _SUFFIXES:
                if name.endswith(suffix) and name[: -len(suffix)] in types:
                    family = name[: -len(suffix)]
                    break
        labels = frozenset(_LABEL.findall(m.group(3) or "")) - {"le", "quantile"}
        out.setdefault(family, set()).add(labels)
    return out
