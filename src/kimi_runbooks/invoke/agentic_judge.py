"""What one assistant turn showed (`Turn`) and the rules each agentic case judges it by.

Every rule returns a list of problems, each a sentence naming the failure and, where a public
report describes it, that report; an empty list means the turn passed that rule. Formats follow
SGLang 0.5.23 with ``--tool-call-parser kimi_k2 --reasoning-parser kimi_k2``: tool-call ids are
``functions.<name>:<tool calls already in the conversation + position>``
(serving_chat.py ``_process_tool_call_id``), native markers never reach ``content`` or
``reasoning_content`` (function_call/kimik2_detector.py, parser/reasoning_parser.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..kimi.parsers import PARSERS, IdFormat
from .session import StreamResult

KIMI_ID = PARSERS["kimi_k2"].ids.pattern

MARKERS = re.compile(
    r"<\|tool_calls?_section_(?:begin|end)\|>|<\|tool_call_(?:begin|end|argument_begin)\|>"
    r"|<\|(?:open|close)\|>(?:tools|call|argument)\b"  # Kimi-K3's XTML tool channel (kimik3_format.py)
)
THINK_TAG = re.compile(r"</?think>|◁/?think▷|<\|(?:open|close)\|>think<\|sep\|>", re.I)


@dataclass
class Turn:
    """One assistant response as the client saw it (whole, or accumulated from a stream)."""

    where: str
    streamed: bool
    reasoning: str = ""
    content: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)  # {"id", "name", "arguments", "index"}
    finish: str | None = None
    argument_pieces: dict[int, int] = field(default_factory=dict)
    announced: dict[int, list[str]] = field(default_factory=dict)  # names announced per stream index
    order: list[str] = field(default_factory=list)  # kind of each streamed delta

    @classmethod
    def from_choice(cls, where: str, choice: Any) -> Turn:
        msg = choice.message
        calls = [
            {"id": c.id, "name": c.function.name, "arguments": c.function.arguments or "", "index": i}
            for i, c in enumerate(msg.tool_calls or [])
        ]
        reasoning = getattr(msg, "reasoning_content", None) or ""
        return cls(where, False, reasoning, msg.content or "", calls, choice.finish_reason)

    @classmethod
    def from_stream(cls, where: str, out: StreamResult) -> Turn:
        calls = [{**out.tool_calls[i], "index": i} for i in sorted(out.tool_calls)]
        pieces = dict(out.argument_pieces)
        return cls(where, True, out.reasoning, out.content, calls, out.finish_reason, pieces, out.announced, out.order)

    def observed(self) -> dict[str, Any]:
        """The turn as the case records it: enough to see what went wrong without the transcript."""
        seen: dict[str, Any] = {
            "turn": self.where,
            "finish_reason": self.finish,
            "content": _clip(self.content),
            "reasoning_chars": len(self.reasoning),
            "tool_calls": [
                {"id": c.get("id"), "name": c.get("name"), "arguments": _clip(c.get("arguments") or "")}
                for c in self.calls
            ],
        }
        if self.streamed:
            seen["argument_pieces"] = {str(k): v for k, v in self.argument_pieces.items()}
        return seen

    def assistant_message(self) -> dict[str, Any]:
        """The message a client sends back: ids and arguments unchanged, reasoning echoed (Kimi guidance)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or None}
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        if self.calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in self.calls
            ]
        return message


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"...<{len(text) - limit} more chars>"


# ---------------------------------------------------------------- rules


def leak_problems(turn: Turn) -> list[str]:
    """No raw tool-call markers and no <think> tags in content or reasoning_content."""
    problems = []
    marker = MARKERS.search(turn.content)
    if marker:
        problems.append(
            f"{turn.where}: raw tool-call markers ({marker.group(0)}) leaked into content and no call was "
            "parsed from them (check --tool-call-parser kimi_k2; malformed ids do this: sgl-project/sglang PR 21377)"
        )
    if MARKERS.search(turn.reasoning):
        problems.append(
            f"{turn.where}: tool-call markers inside reasoning_content: the call was written inside the "
            "thinking and never parsed (SGLang's kimi_k2 reasoning parser ends reasoning at the tool section)"
        )
    for text, name in ((turn.content, "content"), (turn.reasoning, "reasoning_content")):
        tag = THINK_TAG.search(text)
        if tag:
            problems.append(
                f"{turn.where}: {tag.group(0)} tag in {name}: reasoning is not split out "
                "(check --reasoning-parser kimi_k2 and chat_template_kwargs.thinking)"
            )
    return problems


def empty_problems(turn: Turn) -> list[str]:
    """An answer, a call, or at least a reason for stopping: not nothing."""
    if turn.content.strip() or turn.calls or MARKERS.search(turn.reasoning):
        return []
    return [
        f"{turn.where}: empty message after the reasoning: no content and no tool call, finish_reason "
        f"{turn.finish!r} (the K2.6 empty answer on tool follow-ups, MoonshotAI/Kimi-K2 issue 128, "
        "or a call the parser dropped, sgl-project/sglang issue 25358: look for 'Unexpected tool_call_id "
        "format' in the server log)"
    ]


def call_problems(
    turn: Turn, tools: list[dict[str, Any]], history: int, ids: IdFormat = PARSERS["kimi_k2"].ids
) -> list[str]:
    """Each call: a declared tool, JSON-object arguments valid against its schema, a Kimi id in sequence."""
    by_name = {t["function"]["name"]: t["function"] for t in tools}
    problems = []
    if turn.calls and turn.finish != "tool_calls":
        problems.append(f"{turn.where}: finish_reason is {turn.finish!r} with tool calls, expected 'tool_calls'")
    merged = _index_problems(turn)
    if merged:  # per-call checks mean nothing on calls the client merged
        return problems + merged
    for position, call in enumerate(turn.calls):
        name = str(call.get("name"))
        label = f"{turn.where}: call {position} ({name})"
        if name not in by_name:
            problems.append(f"{label}: names a tool that was not declared ({sorted(by_name)})")
            continue
        problems += _id_problems(label, call.get("id"), name, history + position, ids)
        problems += argument_problems(label, call.get("arguments") or "", by_name[name].get("parameters") or {})
    return problems


def _index_problems(turn: Turn) -> list[str]:
    merged = {i: names for i, names in turn.announced.items() if len(names) > 1}
    if not merged:
        return []
    i, names = next(iter(merged.items()))
    return [
        f"{turn.where}: streamed calls {names} were all sent with tool-call index {i}, so a client merges them "
        "into one call (per-call index mix-up, sgl-project/sglang issue 10600)"
    ]


def _id_problems(label: str, call_id: Any, name: str, expected_index: int, ids: IdFormat) -> list[str]:
    match = ids.pattern.match(call_id or "")
    if not match:
        return [
            f"{label}: id {call_id!r} is not in SGLang's Kimi format {ids.spelled}; clients send it back "
            "and K2 answers badly to other ids (MoonshotAI/Kimi-K2 issue 128, sgl-project/sglang issue 9575)"
        ]
    if match.group("name") != name:
        return [f"{label}: id {call_id!r} names {match.group('name')!r}, not the called tool {name!r}"]
    if int(match.group("index")) != expected_index:
        return [
            f"{label}: id {call_id!r} should be {ids.expected(name, expected_index)}: the index counts the tool "
            "calls already in the conversation plus this call's position (ids restart or skip: "
            "sgl-project/sglang issue 10600)"
        ]
    return []


def argument_problems(label: str, raw: str, schema: dict[str, Any]) -> list[str]:
    try:
        args = json.loads(raw)
    except ValueError as exc:
        return [f"{label}: arguments are not valid JSON ({exc}): {_clip(raw, 160)!r}"]
    if not isinstance(args, dict):
        return [f"{label}: arguments are {type(args).__name__}, not a JSON object"]
    validator = _validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(args), key=lambda e: list(e.path))
    if errors:
        return [
            f"{label}: arguments do not match the schema: "
            + "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message[:120]}" for e in errors[:3])
        ]
    return []


def unique_id_problems(ids: list[str | None]) -> list[str]:
    seen: dict[str, int] = {}
    for call_id in ids:
        if call_id:
            seen[call_id] = seen.get(call_id, 0) + 1
    repeated = sorted(i for i, n in seen.items() if n > 1)
    if repeated:
        return [
            f"tool-call ids repeat across the conversation ({', '.join(repeated)}): ids restart each turn instead "
            "of counting earlier calls (sgl-project/sglang issue 10600), so tool results cannot be matched"
        ]
    return []


def mentions_any(text: str, facts: tuple[str, ...]) -> bool:
    low = text.lower()
    return any(f.lower() in low for f in facts)


def first_difference(got: Any, want: Any, path: str = "") -> str | None:
    """Where two JSON values first differ ('/sections/3/body'), or None when equal."""
    if type(got) is not type(want):
        return f"{path or '/'}: {type(got).__name__} instead of {type(want).__name__}"
    if isinstance(want, dict):
        for key in want:
            if key not in got:
                return f"{path}/{key}: missing"
            found = first_difference(got[key], want[key], f"{path}/{key}")
            if found:
                return found
        extra = sorted(set(got) - set(want))
        return f"{path}/{extra[0]}: unexpected key" if extra else None
    if isinstance(want, list):
        if len(got) != len(want):
            return f"{path or '/'}: {len(got)} items instead of {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            found = first_difference(g, w, f"{path}/{i}")
            if found:
                return found
        return None
    if got == want:
        return None
    return f"{path or '/'}: {_short(got)} instead of {_short(want)}"


def _short(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:80]


def _validator_for(schema: Any) -> Any:
    """jsonschema's validator class for `schema`, imported on first use: importing jsonschema
    costs ~0.8 s (its optional format checkers), paid by every kernel that imports the report."""
    import jsonschema

    return jsonschema.validators.validator_for(schema)
