"""Raw output per SGLang parser name: the text the emulated model writes for its planned tokens.

The emulator has no model, so a reply is planned as token events (events.py). This module writes
those events out as the raw text the ``--tool-call-parser`` / ``--reasoning-parser`` a server was
started with reads, and joins that writing to what SGLang 0.5.23's serving layer does per parser
(kimi/parsers.py: markers, call ids, streaming, the prompt stub). One entry per parser name; nothing
else in the emulator branches on a parser or model name.

Markers ride on the neighbouring token's text (they are not counted as tokens), as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from ..kimi import k2_format as k2
from ..kimi.parsers import (
    K3_CALL_CLOSE,
    K3_MESSAGE_CLOSE,
    K3_RESPONSE_CLOSE,
    K3_RESPONSE_OPEN,
    K3_THINK_CLOSE,
    K3_TOOLS_CLOSE,
    K3_TOOLS_OPEN,
    PARSERS,
    ParserFormat,
    xtml_arguments,
    xtml_attribute,
)
from ..kimi.tokenizer import tokenize
from .content import ToolCall
from .events import Event


@dataclass(frozen=True)
class RawTurn:
    """What the renderer needs: the emitted token events and the calls the reply planned."""

    events: list[Event]
    calls: list[ToolCall]
    history_calls: int  # tool calls already in the conversation (they number the new ones)
    thinks: bool  # the model writes reasoning this turn
    finished: bool  # the turn ended on its own (not cut by max_tokens)


@dataclass(frozen=True)
class ChatFormat(ParserFormat):
    """A parser's facts (kimi/parsers.py) with the emulator's writing of its raw output."""

    render: Callable[[RawTurn], list[str]]
    """One raw piece per emitted event: the text the model generated, markers included."""


# ---------------------------------------------------------------- kimi_k2


def _render_k2(turn: RawTurn) -> list[str]:
    pieces: list[str] = []
    state = {"think": turn.thinks, "opened": False, "section": False, "call": False}
    for ev in turn.events:
        prefix = ""
        if ev.kind == "reasoning" and not state["opened"]:
            prefix, state["opened"] = k2.THINK_OPEN, True
        elif ev.kind != "reasoning" and state["think"]:
            prefix = ("" if state["opened"] else k2.THINK_OPEN) + k2.THINK_CLOSE
            state["think"] = False
        if ev.kind == "tool_name":
            prefix += ("" if state["section"] else k2.TOOL_SECTION_BEGIN) + (k2.TOOL_CALL_END if state["call"] else "")
            state["section"] = state["call"] = True
            number = turn.history_calls + ev.call
            pieces.append(f"{prefix}{k2.TOOL_CALL_BEGIN}functions.{ev.text}:{number}{k2.TOOL_ARGUMENT_BEGIN}")
        else:
            pieces.append(prefix + ev.text)
    if turn.finished:
        tail = (k2.TOOL_CALL_END if state["call"] else "") + (k2.TOOL_SECTION_END if state["section"] else "")
        if state["think"]:
            tail = ("" if state["opened"] else k2.THINK_OPEN) + k2.THINK_CLOSE + tail
        _append_tail(pieces, tail)
    return pieces


# ---------------------------------------------------------------- kimi_k3


def _render_k3(turn: RawTurn) -> list[str]:
    """K3's channels over the events; a call's XTML is spread over its argument tokens."""
    pieces: list[str] = []
    in_think, in_response, in_tools = turn.thinks, False, False
    calls = _k3_call_texts(turn)
    for i, ev in enumerate(turn.events):
        prefix = ""
        if ev.kind != "reasoning" and in_think:
            prefix, in_think = K3_THINK_CLOSE, False
        if ev.kind == "content" and not in_response and not in_tools:
            prefix, in_response = prefix + K3_RESPONSE_OPEN, True
        if ev.kind == "tool_name":
            prefix += (K3_RESPONSE_CLOSE if in_response else "") + ("" if in_tools else K3_TOOLS_OPEN)
            in_response, in_tools = False, True
        pieces.append(prefix + calls.get(i, ev.text if ev.kind in ("reasoning", "content") else ""))
    if turn.finished:
        tail = (K3_THINK_CLOSE if in_think else "") + (K3_RESPONSE_CLOSE if in_response else "")
        _append_tail(pieces, tail + (K3_TOOLS_CLOSE if in_tools else "") + K3_MESSAGE_CLOSE)
    return pieces


def _k3_call_texts(turn: RawTurn) -> dict[int, str]:
    """Event position -> raw text of the tool events: the header on the name token, the argument
    XTML cut into as many pieces as the call planned argument tokens, its close on the last one
    (so a call cut by max_tokens is never complete)."""
    out: dict[int, str] = {}
    for call in turn.calls:
        positions = [i for i, ev in enumerate(turn.events) if ev.call == call.index and ev.kind == "tool_args"]
        name_at = [i for i, ev in enumerate(turn.events) if ev.call == call.index and ev.kind == "tool_name"]
        if not name_at:
            continue
        out[name_at[0]] = f'<|open|>call tool="{xtml_attribute(call.name)}" index="{call.index + 1}"<|sep|>'
        body = tokenize(xtml_arguments(_arguments(call.arguments))) + [K3_CALL_CLOSE]
        for pos, text in zip(positions, _split(body, max(len(tokenize(call.arguments)), 1))):
            out[pos] = text
    return out


def _arguments(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError(
            "the kimi_k3 format writes arguments as XTML key/value pairs, so they must be a JSON object "
            "(the bad-tool-json fault is a kimi_k2 fault)"
        ) from None
    if not isinstance(data, dict):
        raise ValueError("the kimi_k3 format writes arguments as XTML key/value pairs: they must be a JSON object")
    return data


def _split(pieces: list[str], parts: int) -> list[str]:
    """``pieces`` joined into exactly ``parts`` strings, in order (the last takes the remainder)."""
    if len(pieces) <= parts:
        return pieces[:-1] + [""] * (parts - len(pieces)) + pieces[-1:]
    size = len(pieces) // parts
    out = ["".join(pieces[k * size : (k + 1) * size]) for k in range(parts - 1)]
    return out + ["".join(pieces[(parts - 1) * size :])]


def _append_tail(pieces: list[str], tail: str) -> None:
    if tail:
        if pieces:
            pieces[-1] += tail
        else:
            pieces.append(tail)


def _written(parser: ParserFormat, render: Callable[[RawTurn], list[str]]) -> ChatFormat:
    return ChatFormat(**{f.name: getattr(parser, f.name) for f in fields(ParserFormat)}, render=render)


FORMATS: dict[str, ChatFormat] = {
    "kimi_k2": _written(PARSERS["kimi_k2"], _render_k2),
    "kimi_k3": _written(PARSERS["kimi_k3"], _render_k3),
}


def chat_format(tool_call_parser: str | None) -> ChatFormat:
    """The format for a server's ``--tool-call-parser`` (kimi_k2 when unset, the emulator's default)."""
    name = tool_call_parser or "kimi_k2"
    if name not in FORMATS:
        raise ValueError(
            f"the emulator speaks the tool-call parsers {', '.join(sorted(FORMATS))}; got {name!r} "
            "(start it with --tool-call-parser kimi_k2 or kimi_k3)"
        )
    return FORMATS[name]
