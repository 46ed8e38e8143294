"""A short string a regular expression matches: what the emulated model writes for a JSON schema's
``pattern`` (a string property of a tool's arguments or of a response_format schema).

SGLang's grammar backend (xgrammar) makes the real model's string match the pattern as a whole;
the emulator builds one from the parsed pattern (Python's own regex parser): each literal as
written, each class's first member (a preferred letter or digit when the class holds one), each
repeat at its minimum (at least once for ``+``), each alternation's first branch, a group
reference as the group's text; anchors and lookarounds add nothing. A pattern it cannot read, or
whose result does not match after all (lookarounds, backreferences to unset groups), gives None
and the caller keeps its own fallback.
"""

from __future__ import annotations

import re
import re._constants as sre_c  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
from typing import Any

_PREFERRED = "aA0 -_.x"
_CATEGORY = {
    sre_c.CATEGORY_DIGIT: "0",
    sre_c.CATEGORY_NOT_DIGIT: "a",
    sre_c.CATEGORY_WORD: "a",
    sre_c.CATEGORY_NOT_WORD: "-",
    sre_c.CATEGORY_SPACE: " ",
    sre_c.CATEGORY_NOT_SPACE: "a",
}
_MAX_LEN = 4096


def text_for(pattern: str) -> str | None:
    """A string that ``pattern`` fully matches (anchors aside), or None when none is found."""
    try:
        parsed = sre_parse.parse(pattern)
        groups: dict[int, str] = {}
        text = _sequence(parsed, groups)
    except (re.error, RecursionError, ValueError, TypeError, IndexError, KeyError, OverflowError):
        return None
    if len(text) > _MAX_LEN:
        return None
    try:
        return text if re.search(pattern, text) is not None else None
    except re.error:
        return None


def _sequence(items: Any, groups: dict[int, str]) -> str:
    return "".join(_item(op, av, groups) for op, av in items)


def _item(op: Any, av: Any, groups: dict[int, str]) -> str:
    if op is sre_c.LITERAL:
        return chr(av)
    if op is sre_c.NOT_LITERAL:
        return "a" if chr(av) != "a" else "b"
    if op is sre_c.ANY:
        return "a"
    if op is sre_c.IN:
        return _in_class(av)
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
        low, _high, body = av
        return _sequence(body, groups) * max(int(low), 0)
    if op is sre_c.SUBPATTERN:
        group, _add, _del, body = av
        text = _sequence(body, groups)
        if group is not None:
            groups[group] = text
        return text
    if op is getattr(sre_c, "ATOMIC_GROUP", None):
        return _sequence(av, groups)
    if op is sre_c.BRANCH:
        _, branches = av
        return _sequence(branches[0], groups)
    if op is sre_c.GROUPREF:
        return groups.get(av, "")
    if op is sre_c.GROUPREF_EXISTS:
        group, yes, no = av
        return _sequence(yes if group in groups else (no or []), groups)
    if op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
        return ""
    raise ValueError(f"unsupported regex op {op}")


def _in_class(items: Any) -> str:
    negate = any(op is sre_c.NEGATE for op, _ in items)
    members = [(op, av) for op, av in items if op is not sre_c.NEGATE]

    def contains(ch: str) -> bool:
        code = ord(ch)
        for op, av in members:
            if op is sre_c.LITERAL and av == code:
                return True
            if op is sre_c.RANGE and av[0] <= code <= av[1]:
                return True
            if op is sre_c.CATEGORY and re.fullmatch(_category_regex(av), ch):
                return True
        return False

    for ch in _PREFERRED + "bcdefghijklmnopqrstuvwxyzBCDEFGHIJKLMNOPQRSTUVWXYZ123456789":
        if contains(ch) != negate:
            return ch
    if not negate:
        op, av = members[0]
        if op is sre_c.LITERAL:
            return chr(av)
        if op is sre_c.RANGE:
            return chr(av[0])
        if op is sre_c.CATEGORY:
            return _CATEGORY.get(av, "a")
    raise ValueError("no member found for a character class")


def _category_regex(category: Any) -> str:
    return {
        sre_c.CATEGORY_DIGIT: r"\d",
        sre_c.CATEGORY_NOT_DIGIT: r"\D",
        sre_c.CATEGORY_WORD: r"\w",
        sre_c.CATEGORY_NOT_WORD: r"\W",
        sre_c.CATEGORY_SPACE: r"\s",
        sre_c.CATEGORY_NOT_SPACE: r"\S",
    }.get(category, r"[^\s\S]")
