"""Plan.arguments_end: where a format that sends a tool call whole (not streamed argument by
argument) sends it, found once per call instead of by re-tokenizing the arguments every token."""

from __future__ import annotations

from kimi_runbooks.emulator.content import ToolCall
from kimi_runbooks.emulator.events import Event, Plan
from kimi_runbooks.kimi.tokenizer import tokenize

CALL = ToolCall(0, "get_weather", '{"location": "Paris", "unit": "celsius"}')


def _events(call: ToolCall, pieces: list[str]) -> list[Event]:
    header = [Event("content", "ok"), Event("tool_name", "", call.index)]
    return header + [Event("tool_args", p, call.index) for p in pieces]


def test_a_complete_call_ends_at_its_last_argument_token():
    pieces = tokenize(CALL.arguments)
    assert len(pieces) > 3
    plan = Plan(_events(CALL, pieces), "tool_calls", [CALL])
    assert plan.arguments_end(CALL) == len(plan.events) - 1


def test_a_call_cut_by_max_tokens_or_without_arguments_never_ends():
    pieces = tokenize(CALL.arguments)
    assert Plan(_events(CALL, pieces[:-1]), "length", [CALL]).arguments_end(CALL) is None
    empty = ToolCall(1, "ping", "")
    assert Plan(_events(empty, []), "tool_calls", [empty]).arguments_end(empty) is None
