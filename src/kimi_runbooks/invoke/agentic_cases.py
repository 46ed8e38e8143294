"""Agentic cases, part 1: conversations an agent has with the server.

Multi-turn call -> result -> call, parallel calls answered together, several KB of nested
arguments, tool names with hyphens, a tool without parameters. Each case drives the
conversation through the openai client (`Script`), records what every turn showed, and returns
why it passed or raises CheckFailed naming each problem (rules: agentic_judge.py).
"""

from __future__ import annotations

import json
from typing import Any

from . import agentic_tools as T
from .agentic_judge import (
    Turn,
    call_problems,
    empty_problems,
    first_difference,
    leak_problems,
    mentions_any,
    unique_id_problems,
)
from .session import CheckFailed, Recorder, Session

MAX_TURNS = 5


class Script:
    """Sends one case's turns, streamed or not, and records each turn's observation."""

    def __init__(self, s: Session, rec: Recorder, stream: bool) -> None:
        self.s, self.rec, self.stream = s, rec, stream
        self.observed: list[dict[str, Any]] = rec.details.setdefault("observed", [])

    def send(
        self, where: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, **extra: Any
    ) -> Turn:
        body: dict[str, Any] = {"model": self.s.model, "messages": messages, "max_tokens": self.s.max_tokens}
        if tools:
            body["tools"] = tools
        body.update(extra)
        if self.stream:
            turn = Turn.from_stream(where, self.rec.stream(body))
        else:
            turn = Turn.from_choice(where, self.rec.chat(body))
        self.observed.append(turn.observed())
        return turn


def done(problems: list[str], ok: str) -> str:
    if problems:
        raise CheckFailed("; ".join(dict.fromkeys(problems)))
    return ok


def user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def results_for(turn: Turn) -> list[dict[str, Any]]:
    """The tool messages a client sends back, one per call, each answering its call's id."""
    return [{"role": "tool", "tool_call_id": c["id"], "content": T.result_for(c["name"])} for c in turn.calls]


def missing_call(turn: Turn, wanted: str) -> list[str]:
    """Why no call came back: a leak or an empty turn says it already; else say what was expected."""
    if turn.calls or leak_problems(turn):
        return []
    return empty_problems(turn) or [
        f"{turn.where}: no tool call came back (expected {wanted}); finish_reason {turn.finish!r}, "
        f"content {turn.content[:120]!r}"
    ]


# ---------------------------------------------------------------- multi-turn


def multi_turn(s: Session, rec: Recorder, stream: bool) -> str:
    script = Script(s, rec, stream)
    messages = user(T.MULTI_TURN_PROMPT)
    problems: list[str] = []
    ids: list[str | None] = []
    called: list[str] = []
    call_turns, history = 0, 0
    final: Turn | None = None
    for n in range(1, MAX_TURNS + 1):
        turn = script.send(f"turn {n}", messages, T.MULTI_TURN_TOOLS)
        problems += leak_problems(turn) + call_problems(turn, T.MULTI_TURN_TOOLS, history, s.served.ids)
        if not turn.calls:
            final = turn
            break
        call_turns += 1
        for call in turn.calls:
            ids.append(call["id"])
            called.append(call["name"])
            problems += _booking_problems(turn, call, called)
        messages = messages + [turn.assistant_message()] + results_for(turn)
        history += len(turn.calls)
    problems += unique_id_problems(ids)
    if final is None:
        problems.append(f"no final answer after {MAX_TURNS} turns: the model kept calling tools ({called})")
    else:
        problems += empty_problems(final) if not leak_problems(final) else []
        if final.content.strip() and "book_table" in called and not mentions_any(final.content, T.FACTS["book_table"]):
            problems.append(f"{final.where}: the final answer does not use the booking result: {final.content[:160]!r}")
    missing = [t["function"]["name"] for t in T.MULTI_TURN_TOOLS if t["function"]["name"] not in called]
    if missing:
        problems.append(f"never called {missing} (called {called or 'nothing'} in {call_turns} turn(s))")
    elif call_turns < 2:
        problems.append("all calls came in one turn: the case needs call -> result -> call")
    return done(problems, f"{call_turns} call turns {called}, ids {ids} unique and in sequence, final answer given")


def _booking_problems(turn: Turn, call: dict[str, Any], called: list[str]) -> list[str]:
    """book_table after search_places must reuse the restaurant the search returned."""
    if call["name"] != "book_table" or "search_places" not in called[:-1]:
        return []
    try:
        restaurant = json.loads(call["arguments"] or "{}").get("restaurant")
    except (ValueError, AttributeError):
        return []  # invalid arguments are reported by call_problems
    if restaurant != T.RESTAURANT:
        return [
            f"{turn.where}: book_table's restaurant is {restaurant!r}, not {T.RESTAURANT!r} that search_places returned"
        ]
    return []


# ---------------------------------------------------------------- parallel calls


def parallel_calls(s: Session, rec: Recorder, stream: bool) -> str:
    script = Script(s, rec, stream)
    messages = user(T.PARALLEL_PROMPT)
    turn = script.send("turn 1", messages, T.PARALLEL_TOOLS)
    problems = leak_problems(turn) + call_problems(turn, T.PARALLEL_TOOLS, 0, s.served.ids)
    problems += missing_call(turn, "get_weather and get_time together")
    names = sorted(c.get("name") or "" for c in turn.calls)
    if turn.calls and names != ["get_time", "get_weather"]:
        problems.append(f"turn 1: expected get_weather and get_time called together in one turn, got {names}")
    if problems:
        return done(problems, "")
    answer = script.send("turn 2", messages + [turn.assistant_message()] + results_for(turn), T.PARALLEL_TOOLS)
    problems += leak_problems(answer) + empty_problems(answer)
    if answer.calls:
        problems.append(f"turn 2: more tool calls instead of the answer: {[c['name'] for c in answer.calls]}")
    text = answer.content
    if text.strip() and not (mentions_any(text, T.FACTS["get_weather"]) and mentions_any(text, T.FACTS["get_time"])):
        problems.append(f"turn 2: the answer does not use both results (weather and time): {text[:160]!r}")
    ids = [c["id"] for c in turn.calls]
    return done(problems, f"two calls in one turn ({ids}), both results answered in one message")


# ---------------------------------------------------------------- long arguments


def long_arguments(s: Session, rec: Recorder, stream: bool) -> str:
    script = Script(s, rec, stream)
    turn = script.send("turn 1", user(T.long_arguments_prompt()), [T.SAVE_DOCUMENT])
    problems = leak_problems(turn) + missing_call(turn, "save_document")
    if not turn.calls:
        return done(problems, "")
    call = turn.calls[0]
    raw = call.get("arguments") or ""
    rec.details["argument_chars"] = len(raw)
    want = len(json.dumps(T.LONG_DOCUMENT, ensure_ascii=False))
    try:
        args = json.loads(raw)
    except ValueError:
        args = None
        if stream and len(raw) < 0.9 * want:
            problems.append(
                f"turn 1: the {turn.argument_pieces.get(call['index'], 0)} streamed argument pieces do not "
                f"reassemble into JSON: {len(raw)} chars arrived for a ~{want}-char document, ending "
                f"{raw[-60:]!r} (pieces lost or cut in streaming: sgl-project/sglang issue 23363)"
            )
    problems += call_problems(turn, [T.SAVE_DOCUMENT], 0, s.served.ids)
    if isinstance(args, dict):
        where = first_difference(args.get("document"), T.LONG_DOCUMENT, "/document")
        if where:
            problems.append(f"turn 1: the document argument differs from the one given, first at {where}")
    pieces = turn.argument_pieces.get(call["index"], 0)
    if stream and pieces < 2 and s.served.streams_tool_arguments:
        problems.append(f"turn 1: the {len(raw)}-char arguments arrived in {pieces} piece(s), not streamed")
    how = f"streamed in {pieces} pieces and reassembled" if stream else "returned whole"
    return done(problems, f"{len(raw)} chars of nested unicode JSON {how} exactly")


# ---------------------------------------------------------------- names and parameters


def tool_names(s: Session, rec: Recorder) -> str:
    script = Script(s, rec, False)
    tools = [T.GEO_LOOKUP, T.GEO_LOOKUP_OLD]
    turn = script.send("turn 1", user(T.NAMES_PROMPT), tools)
    problems = leak_problems(turn) + call_problems(turn, tools, 0, s.served.ids)
    if not turn.calls and not leak_problems(turn):
        problems.append(
            f"turn 1: no tool call came back for {T.HYPHEN_NAME!r}, a name with a hyphen, an underscore and a "
            "digit: a parser whose name pattern lacks '-' drops such calls (vllm-project/vllm PR 22149; SGLang "
            "0.5.23's kimi_k2 pattern [\\w.\\-]+ accepts them)"
        )
    names = [c.get("name") for c in turn.calls]
    if turn.calls and names != [T.HYPHEN_NAME]:
        problems.append(f"turn 1: expected one call to {T.HYPHEN_NAME!r}, got {names}")
    return done(problems, f"{T.HYPHEN_NAME} called by its exact name, id {[c.get('id') for c in turn.calls]}")


def no_parameters(s: Session, rec: Recorder) -> str:
    script = Script(s, rec, False)
    turn = script.send("turn 1", user(T.NO_PARAMS_PROMPT), [T.SERVER_TIME])
    problems = leak_problems(turn) + call_problems(turn, [T.SERVER_TIME], 0, s.served.ids)
    problems += missing_call(turn, "get_server_time")  # the schema allows only {} (additionalProperties false)
    return done(problems, "get_server_time called with arguments {}")
