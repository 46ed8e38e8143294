"""Raw output formats per SGLang parser name: what the emulated model writes, and how SGLang shows it.

The emulator has no model, so a reply is planned as token events (events.py). This module says,
for the ``--tool-call-parser`` / ``--reasoning-parser`` a server was started with, the raw text
those tokens are (what the parser reads) and the few ways SGLang 0.5.23's serving layer then
answers differently per parser. One entry per parser name; nothing else in the emulator branches
on a parser or model name. Sources, all in the installed sglang 0.5.23:

* ``kimi_k2``: reasoning ``<think>...</think>`` (parser/reasoning_parser.py KimiK2Detector, which
  the model writes itself: the open marker is in the output); tool calls
  ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:K<|tool_call_argument_begin|>{json}
  <|tool_call_end|>...<|tool_calls_section_end|>`` (function_call/kimik2_detector.py), streamed
  name first, then argument pieces; ids ``functions.NAME:K`` (serving_chat.py _process_tool_call_id).
* ``kimi_k3``: Kimi-K3's XTML channels (function_call/kimik3_format.py). In thinking mode the prompt
  pre-fills ``<|open|>think<|sep|>``, so the output starts inside the think channel and closes it with
  ``<|close|>think<|sep|>`` (kimik3_structural_tag.py ``_with_reasoning``: the reasoning tag has an
  empty begin); the answer sits in ``<|open|>response<|sep|>...<|close|>response<|sep|>``, tool calls
  in ``<|open|>tools<|sep|><|open|>call tool="NAME" index="N"<|sep|><|open|>argument key="K"
  type="T"<|sep|>VALUE<|close|>argument<|sep|>...<|close|>call<|sep|><|close|>tools<|sep|>``, and the
  turn ends ``<|close|>message<|sep|>``. KimiK3Detector (function_call/kimik3_detector.py) emits a
  call whole, name and arguments in one chunk, once its ``<|close|>call<|sep|>`` arrives; ids are
  ``NAME:K`` (serving_chat.py _process_tool_call_id); reported prompt tokens exclude the 3-token
  generation stub (serving_chat.py _reported_prompt_tokens, _KIMI_K3_GENERATION_STUB_TOKENS).
  The reasoning parser is forced only when the request's ``chat_template_kwargs.thinking`` is not
  False (serving_chat.py _get_reasoning_from_request with KimiK3Detector's reasoning_default
  "thinking"); a model that thinks anyway then streams its think channel as content, close marker
  included, while a whole response still splits at the marker (KimiK3Detector.detect_and_parse
  splits at ``<|close|>think<|sep|>`` with or without the open marker; its parse_streaming_increment
  decides on the first chunk). Public account of that leak: sgl-project/sglang PR 32677.

Markers ride on the neighbouring token's text (they are not counted as tokens), as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .content import ToolCall
from .events import Event
from .tokenizer import tokenize


@dataclass(frozen=True)
class RawTurn:
    """What the renderer needs: the emitted token events and the calls the reply planned."""

    events: list[Event]
    calls: list[ToolCall]
    history_calls: int  # tool calls already in the conversation (they number the new ones)
    thinks: bool  # the model writes reasoning this turn
    finished: bool  # the turn ended on its own (not cut by max_tokens)


@dataclass(frozen=True)
class ChatFormat:
    """How one parser pair reads the model's output, and what SGLang's serving layer does with it."""

    name: str
    think_open: str
    think_close: str
    open_in_output: bool
    """The model writes the think-open marker (kimi_k2); else the prompt pre-fills it (kimi_k3)."""
    streams_tool_arguments: bool
    """Name chunk first, then argument pieces (kimi_k2); else one whole chunk per finished call."""
    unreported_prompt_tokens: int
    """Prompt tokens the model reads but SGLang leaves out of usage (K3's generation stub)."""
    call_id: Callable[[str, int], str]
    """(tool name, history calls + position) -> the id SGLang gives the call."""
    render: Callable[[RawTurn], list[str]]
    """One raw piece per emitted event: the text the model generated, markers included."""

    def tool_call_id(self, name: str, history_calls: int, position: int) -> str:
        return self.call_id(name, history_calls + position)

    def parser_forced(self, thinking_requested: bool) -> bool:
        """Whether SGLang's reasoning parser starts inside reasoning for this request."""
        return thinking_requested

    def thinking_leaks_in_stream(self, model_thinks: bool, thinking_requested: bool) -> bool:
        """A model that thinks although the request said not to: with the open marker pre-filled
        (not in the output), the unforced parser passes the think channel through as content."""
        return model_thinks and not thinking_requested and not self.open_in_output


# ---------------------------------------------------------------- kimi_k2

K2_SECTION_OPEN, K2_SECTION_CLOSE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
K2_CALL_OPEN, K2_CALL_ARGS, K2_CALL_CLOSE = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


def _render_k2(turn: RawTurn) -> list[str]:
    pieces: list[str] = []
    state = {"think": turn.thinks, "opened": False, "section": False, "call": False}
    for ev in turn.events:
        prefix = ""
        if ev.kind == "reasoning" and not state["opened"]:
            prefix, state["opened"] = "<think>", True
        elif ev.kind != "reasoning" and state["think"]:
            prefix = ("" if state["opened"] else "<think>") + "</think>"
            state["think"] = False
        if ev.kind == "tool_name":
            prefix += ("" if state["section"] else K2_SECTION_OPEN) + (K2_CALL_CLOSE if state["call"] else "")
            state["section"] = state["call"] = True
            number = turn.history_calls + ev.call
            pieces.append(f"{prefix}{K2_CALL_OPEN}functions.{ev.text}:{number}{K2_CALL_ARGS}")
        else:
            pieces.append(prefix + ev.text)
    if turn.finished:
        tail = (K2_CALL_CLOSE if state["call"] else "") + (K2_SECTION_CLOSE if state["section"] else "")
        if state["think"]:
            tail = ("" if state["opened"] else "<think>") + "</think>" + tail
        _append_tail(pieces, tail)
    return pieces


# ---------------------------------------------------------------- kimi_k3

K3_THINK_OPEN, K3_THINK_CLOSE = "<|open|>think<|sep|>", "<|close|>think<|sep|>"
K3_RESPONSE_OPEN, K3_RESPONSE_CLOSE = "<|open|>response<|sep|>", "<|close|>response<|sep|>"
K3_TOOLS_OPEN, K3_TOOLS_CLOSE = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
K3_CALL_CLOSE, K3_ARGUMENT_CLOSE = "<|close|>call<|sep|>", "<|close|>argument<|sep|>"
K3_MESSAGE_CLOSE = "<|close|>message<|sep|>"
_XTML_TYPE = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def _attr(value: str) -> str:
    """kimik3_structural_tag.py ``_escape_attr`` (the detector's ``_unescape_attr`` undoes it)."""
    return value.replace("&", "&amp;").replace('"', "&quot;")


def xtml_arguments(arguments: dict[str, Any]) -> str:
    """Arguments as K3 writes them: strings raw, other values as JSON (KimiK3Detector._decode_call)."""
    out = []
    for key, value in arguments.items():
        kind = "null" if value is None else _XTML_TYPE.get(type(value), "object")
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append(f'<|open|>argument key="{_attr(key)}" type="{kind}"<|sep|>{text}{K3_ARGUMENT_CLOSE}')
    return "".join(out)


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
        out[name_at[0]] = f'<|open|>call tool="{_attr(call.name)}" index="{call.index + 1}"<|sep|>'
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


FORMATS: dict[str, ChatFormat] = {
    "kimi_k2": ChatFormat(
        name="kimi_k2",
        think_open="<think>",
        think_close="</think>",
        open_in_output=True,
        streams_tool_arguments=True,
        unreported_prompt_tokens=0,
        call_id=lambda name, k: f"functions.{name}:{k}",
        render=_render_k2,
    ),
    "kimi_k3": ChatFormat(
        name="kimi_k3",
        think_open=K3_THINK_OPEN,
        think_close=K3_THINK_CLOSE,
        open_in_output=False,
        streams_tool_arguments=False,
        unreported_prompt_tokens=3,
        call_id=lambda name, k: f"{name}:{k}",
        render=_render_k3,
    ),
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
