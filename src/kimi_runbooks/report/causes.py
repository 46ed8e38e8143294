"""A stage's failures grouped by cause, with one diagnosis when they share one.

Against a server that is not Kimi behind SGLang's kimi_k2 parsers (a small model under Kimi's name,
or parsers left off), every reasoning check and every tool-call check fails, each with its own
reason: 26 lines a reader must add up. Grouped, they read as what they are: no reasoning and no tool
calls at all while plain chat works, which only a server without the Kimi parsers (or without Kimi)
produces.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

REASONING = ("thinking", "thinking_stream")
TOOLS = ("tool_call", "tool_call_stream", "tool_result", "image_tools")
STRUCTURED = (
    "structured_json_schema",
    "structured_json_schema_stream",
    "structured_json_object",
    "structured_json_object_stream",
)
AFTER_RESULT = (
    "required_after_result",
    "required_after_result_stream",
    "named_after_result",
    "named_after_result_stream",
)
VENDOR_VERIFIER = ("kvv_params", "kvv_tool_schema", "kvv_tool_schema_stream", "kvv_prompt_tokens")
FAMILIES = (
    ("reasoning", REASONING),
    ("tool calls", TOOLS),
    ("structured output", STRUCTURED),
    ("tool_choice after a tool result", AFTER_RESULT),
    ("Kimi Vendor Verifier checks", VENDOR_VERIFIER),
)
"""Checks that fail together for one cause (a parser off, response_format ignored): one line each."""
NOT_KIMI = (
    "no reasoning and no tool calls at all while plain chat answers: the server is not Kimi behind "
    "--reasoning-parser kimi_k2 --tool-call-parser kimi_k2 (another model under this name, or the parsers are off)"
)
NOT_KIMI_FIX = (
    "serve a Kimi-K2 checkpoint with both kimi_k2 parsers (sglang serve ... --reasoning-parser kimi_k2 "
    "--tool-call-parser kimi_k2), and check /v1/models names the model you meant"
)


@dataclass(frozen=True)
class Group:
    cause: str
    names: list[str] = field(default_factory=list)
    example: str = ""


def _family(result: Any) -> str:
    if getattr(result, "suite", "feature") == "agentic":
        return "agentic cases"
    for family, names in FAMILIES:
        if result.name in names:
            return family
    return str(result.name)


def diagnosis(results: Sequence[Any] | None) -> str | None:
    """The one cause shared by the invoke stage's failures, when they have one."""
    by_name = {r.name: r.status for r in results or [] if getattr(r, "suite", "feature") == "feature"}
    ran = [n for n in (*REASONING, *TOOLS) if by_name.get(n) in ("pass", "fail")]
    if by_name.get("chat") != "pass" or not any(n in ran for n in REASONING) or not any(n in ran for n in TOOLS):
        return None
    return NOT_KIMI if all(by_name[n] == "fail" for n in ran) else None


def groups(results: Sequence[Any] | None) -> list[Group]:
    """The failed checks by family (reasoning, tool calls, agentic cases, then each other check)."""
    found: dict[str, Group] = {}
    for r in results or []:
        if r.status != "fail":
            continue
        family = _family(r)
        group = found.setdefault(family, Group(family, [], str(r.reason)[:200]))
        group.names.append(r.name)
    return list(found.values())


VARYING = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # uuids
    r"|\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b"  # hex ids (request ids, run tokens)
    r"|0x[0-9a-f]+"
    r"|\d+(?:\.\d+)?",
    re.IGNORECASE,
)


def cause_key(error: str) -> str:
    """An error's cause for grouping: its first line with numbers and ids made alike (a port, a
    request id or a duration differs between scenarios failing for the same reason)."""
    first = next((line.strip() for line in str(error or "").splitlines() if line.strip()), "")
    return VARYING.sub("#", first).lower()


def by_cause(failures: Iterable[tuple[str, str]]) -> list[Group]:
    """(name, error) pairs of a stage's failed units (speed scenarios, accuracy suites) as one group
    per cause, in first-seen order; a group's example is the first such error's first line."""
    found: dict[str, Group] = {}
    for name, error in failures:
        first = next((line.strip() for line in str(error or "").splitlines() if line.strip()), "")
        group = found.setdefault(cause_key(error), Group(first[:300] or "no error recorded", [], first[:300]))
        group.names.append(name)
    return list(found.values())


def speed_failures(frame: Any, status: str = "failed") -> list[Group]:
    """The speed stage's failed (or `status`: skipped, ...) scenarios grouped by cause (their error
    after normalising)."""
    if frame is None or "status" not in frame.columns:
        return []
    rows = frame[frame["status"] == status]
    errors = rows["error"] if "error" in rows.columns else [""] * len(rows)
    return by_cause(
        (str(s), "" if not isinstance(e, str) else e) for s, e in zip(rows["scenario"], errors, strict=True)
    )


def accuracy_failures(rows: Sequence[dict[str, Any]] | None) -> list[Group]:
    """The accuracy stage's errored suites grouped by cause (the tool's error after normalising)."""
    latest = {str(r.get("suite")): r for r in rows or []}  # a suite rerun: its last row counts
    return by_cause((s, str(r.get("detail") or "")) for s, r in latest.items() if r.get("status") == "error")


FIX = re.compile(r"\.?\s*\bFix:", re.IGNORECASE)


def without_fix(text: str) -> str:
    """'<problem>. Fix: <fix>' -> '<problem>' (a card says the problem; the next steps say the fix)."""
    return FIX.split(text, maxsplit=1)[0].rstrip(" .;")


def named(group: Group, unit: str, shown: int = 6) -> str:
    """'3 scenarios: a, b, c' / 'scenario a' for a group."""
    if len(group.names) == 1:
        return f"{unit} {group.names[0]}"
    more = f" and {len(group.names) - shown} more" if len(group.names) > shown else ""
    return f"{len(group.names)} {unit}s ({', '.join(group.names[:shown])}{more})"
