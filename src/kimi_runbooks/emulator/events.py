"""Turns a reply into the token events a server would stream, within a token budget.

One event is one generated token: a reasoning piece, a content piece, the start of
a tool call (Kimi's call header: section/call markers, id and name) or a piece of
its arguments.  Counting events is how completion_tokens stays exact, and cutting
or padding the event list is how max_tokens and ignore_eos are honoured
(bench_serving depends on exact output lengths under ignore_eos).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Literal

from ..kimi.k2_format import THINK_CLOSE, THINK_OPEN
from ..kimi.tokenizer import tokenize
from .content import Reply, ToolCall, filler_pieces

Kind = Literal["reasoning", "content", "tool_name", "tool_args"]
EOS_TOKEN_ID = 163586  # Kimi-K2's <|im_end|>; reported as matched_stop like SGLang does


@dataclass(frozen=True)
class Event:
    kind: Kind
    text: str = ""
    call: int = -1  # tool-call index for tool events


@dataclass
class Plan:
    """The events to emit and how the turn ends."""

    events: list[Event]
    finish_reason: str  # "stop" | "length" | "tool_calls"
    tool_calls: list[ToolCall] = field(default_factory=list)

    @property
    def completion_tokens(self) -> int:
        return len(self.events)

    def reasoning_text(self) -> str:
        return "".join(e.text for e in self.events if e.kind == "reasoning")

    def content_text(self) -> str:
        return "".join(e.text for e in self.events if e.kind == "content")

    def arguments_end(self, call: ToolCall) -> int | None:
        """Position of the event that completes `call`'s arguments (its last argument token), or
        None when the events stop before all of them (max_tokens cut the call short)."""
        positions = [i for i, e in enumerate(self.events) if e.kind == "tool_args" and e.call == call.index]
        if not positions or len(positions) != len(tokenize(call.arguments)):
            return None
        return positions[-1]

    def emitted_tool_calls(self) -> list[tuple[ToolCall, str]]:
        """Tool calls whose header was emitted, with the argument text emitted so far."""
        out = []
        for call in self.tool_calls:
            if any(e.kind == "tool_name" and e.call == call.index for e in self.events):
                args = "".join(e.text for e in self.events if e.kind == "tool_args" and e.call == call.index)
                out.append((call, args))
        return out


def reply_events(
    reply: Reply, thinking: bool, leak_reasoning: bool, markers: tuple[str, str] = (THINK_OPEN, THINK_CLOSE)
) -> list[Event]:
    """Events of the natural reply.

    thinking=False drops the reasoning entirely (instant mode); leak_reasoning puts it
    into content inside the format's think markers (``markers``: open, close; the open one
    empty when the prompt pre-fills it), as a server without --reasoning-parser shows it.
    """
    events: list[Event] = []
    if thinking and reply.reasoning:
        if leak_reasoning:
            events += [Event("content", m) for m in markers[:1] if m]
            events += [Event("content", p) for p in tokenize(reply.reasoning)]
            events.append(Event("content", markers[1]))
        else:
            events += [Event("reasoning", p) for p in tokenize(reply.reasoning)]
    content = reply.content
    if leak_reasoning and thinking and content:
        content = "\n\n" + content.lstrip()
    events += [Event("content", p) for p in tokenize(content)]
    for call in reply.tool_calls:
        events.append(Event("tool_name", call.name, call.index))
        events += [Event("tool_args", p, call.index) for p in tokenize(call.arguments)]
    return events


def plan_within_budget(
    reply: Reply, events: list[Event], max_tokens: int | None, ignore_eos: bool, rng: random.Random
) -> Plan:
    """Cut to max_tokens, or pad with filler to exactly max_tokens under ignore_eos."""
    if max_tokens is not None and len(events) > max_tokens:
        return Plan(events[:max_tokens], "length", reply.tool_calls)
    if ignore_eos and max_tokens is not None and len(events) < max_tokens:
        return Plan(_pad(events, max_tokens, rng), "length", reply.tool_calls)
    finish = "tool_calls" if reply.tool_calls else "stop"
    return Plan(list(events), finish, reply.tool_calls)


def _pad(events: list[Event], total: int, rng: random.Random) -> list[Event]:
    """Insert filler content after the existing content (before any tool call)."""
    split = next((i for i, e in enumerate(events) if e.kind in ("tool_name", "tool_args")), len(events))
    has_text = any(e.kind == "content" for e in events[:split])
    lead = "\n\n" if has_text else ""
    padding = [Event("content", p) for p in filler_pieces(rng, total - len(events), lead)]
    return events[:split] + padding + events[split:]


def text_plan(text: str, max_tokens: int | None, ignore_eos: bool, rng: random.Random) -> Plan:
    """Plain-text generation (/generate, /v1/completions): content events only."""
    reply = Reply(reasoning="", content=text)
    events = [Event("content", p) for p in tokenize(text)]
    return plan_within_budget(reply, events, max_tokens, ignore_eos, rng)
