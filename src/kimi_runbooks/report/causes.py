"""A stage's failures grouped by cause, with one diagnosis when they share one.

Against a server that is not Kimi behind SGLang's kimi_k2 parsers (a small model under Kimi's name,
or parsers left off), every reasoning check and every tool-call check fails, each with its own
reason: 26 lines a reader must add up. Grouped, they read as what they are: no reasoning and no tool
calls at all while plain chat works, which only a server without the Kimi parsers (or without Kimi)
produces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

REASONING = ("thinking", "thinking_stream")
TOOLS = ("tool_call", "tool_call_stream", "tool_result", "image_tools")
FAMILIES = (
    ("reasoning", REASONING),
    ("tool calls", TOOLS),
)
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
