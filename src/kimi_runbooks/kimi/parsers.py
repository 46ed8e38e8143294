"""SGLang's Kimi parsers: what each reads in the model's output, and how SGLang's serving layer answers.

One entry per ``--tool-call-parser`` name (its ``--reasoning-parser`` has the same name). The emulator
writes its raw output by these facts (emulator/formats.py adds the writing), and the stages hold a
server's answers to them (invoke/served.py). Sources, all in the installed sglang 0.5.23:

* ``kimi_k2``: reasoning ``<think>...</think>`` (parser/reasoning_parser.py KimiK2Detector, which
  the model writes itself: the open marker is in the output); tool calls
  ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:K<|tool_call_argument_begin|>{json}
  <|tool_call_end|>...<|tool_calls_section_end|>`` (function_call/kimik2_detector.py; the markers are
  k2_format.py's), streamed name first, then argument pieces; ids ``functions.NAME:K``
  (serving_chat.py _process_tool_call_id).
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

K counts the tool calls already in the conversation plus the call's position in its turn.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from . import k2_format as k2

K3_THINK_OPEN, K3_THINK_CLOSE = "<|open|>think<|sep|>", "<|close|>think<|sep|>"
K3_RESPONSE_OPEN, K3_RESPONSE_CLOSE = "<|open|>response<|sep|>", "<|close|>response<|sep|>"
K3_TOOLS_OPEN, K3_TOOLS_CLOSE = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
K3_CALL_CLOSE, K3_ARGUMENT_CLOSE = "<|close|>call<|sep|>", "<|close|>argument<|sep|>"
K3_MESSAGE_CLOSE = "<|close|>message<|sep|>"
_XTML_TYPE = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}


def xtml_attribute(value: str) -> str:
    """kimik3_structural_tag.py ``_escape_attr`` (the detector's ``_unescape_attr`` undoes it)."""
    return value.replace("&", "&amp;").replace('"', "&quot;")


def xtml_arguments(arguments: dict[str, Any]) -> str:
    """Arguments as K3 writes them: strings raw, other values as JSON (KimiK3Detector._decode_call)."""
    out = []
    for key, value in arguments.items():
        kind = "null" if value is None else _XTML_TYPE.get(type(value), "object")
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        out.append(f'<|open|>argument key="{xtml_attribute(key)}" type="{kind}"<|sep|>{text}{K3_ARGUMENT_CLOSE}')
    return "".join(out)


@dataclass(frozen=True)
class IdFormat:
    """A parser's tool-call id convention."""

    pattern: re.Pattern[str]
    spelled: str  # how a message names the convention

    def expected(self, name: str, index: int) -> str:
        return self.spelled.replace("<name>", name).replace("<idx>", str(index))


@dataclass(frozen=True)
class ParserFormat:
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
    ids: IdFormat
    """The id SGLang gives a call: the tool's name and its number K."""

    def tool_call_id(self, name: str, history_calls: int, position: int) -> str:
        return self.ids.expected(name, history_calls + position)

    def parser_forced(self, thinking_requested: bool) -> bool:
        """Whether SGLang's reasoning parser starts inside reasoning for this request."""
        return thinking_requested

    def thinking_leaks_in_stream(self, model_thinks: bool, thinking_requested: bool) -> bool:
        """A model that thinks although the request said not to: with the open marker pre-filled
        (not in the output), the unforced parser passes the think channel through as content."""
        return model_thinks and not thinking_requested and not self.open_in_output


PARSERS: dict[str, ParserFormat] = {
    "kimi_k2": ParserFormat(
        name="kimi_k2",
        think_open=k2.THINK_OPEN,
        think_close=k2.THINK_CLOSE,
        open_in_output=True,
        streams_tool_arguments=True,
        unreported_prompt_tokens=0,
        ids=IdFormat(re.compile(r"^functions\.(?P<name>[\w.\-]+):(?P<index>\d+)$"), "functions.<name>:<idx>"),
    ),
    "kimi_k3": ParserFormat(
        name="kimi_k3",
        think_open=K3_THINK_OPEN,
        think_close=K3_THINK_CLOSE,
        open_in_output=False,
        streams_tool_arguments=False,
        unreported_prompt_tokens=3,
        ids=IdFormat(re.compile(r"^(?P<name>[\w.\-]+):(?P<index>\d+)$"), "<name>:<idx>"),
    ),
}
DEFAULT_PARSER = "kimi_k2"


def parser_format(tool_call_parser: str | None) -> ParserFormat:
    """The entry of a server's ``--tool-call-parser`` (kimi_k2 when unset); an unknown name is refused."""
    name = tool_call_parser or DEFAULT_PARSER
    if name not in PARSERS:
        raise ValueError(
            f"the project knows the Kimi tool-call parsers {', '.join(sorted(PARSERS))}; got {name!r} "
            "(use --tool-call-parser kimi_k2 or kimi_k3)"
        )
    return PARSERS[name]
