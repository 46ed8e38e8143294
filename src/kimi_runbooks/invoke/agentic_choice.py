"""Agentic cases, part 2: tool_choice, thinking around a call, the follow-up, leaks, truncation.

What SGLang 0.5.23 does, which these cases expect (serving_chat.py, kimik2_detector.py):
``tool_choice`` required or named constrains decoding to a call (xgrammar structural tag);
``none`` keeps the tools out of the prompt and the parser off; with thinking on the call comes
after the reasoning; a call cut by ``max_tokens`` is dropped from a whole response
(finish_reason ``length``, no ``tool_calls``), while a stream has already sent its partial
argument deltas and ends with finish_reason ``length``: the client must not run that call.
"""

from __future__ import annotations

import json
from typing import Any

from . import agentic_tools as T
from .agentic_cases import Script, done, missing_call, user
from .agentic_judge import Turn, call_problems, empty_problems, leak_problems, mentions_any
from .session import Recorder, Session

TRUNCATE_AT = 48  # max_tokens for the truncation case: far inside a ~1,500-token call
NAMED = {"type": "function", "function": {"name": "get_time"}}
WEATHER_TOOLS = [T.GET_WEATHER, T.GET_TIME]


def _text_answer(turn: Turn, why: str) -> list[str]:
    """A plain answer: no calls, some content, finish_reason stop."""
    problems = leak_problems(turn)
    if turn.calls:
        problems.append(f"{turn.where}: {why}, but the response has tool calls {[c.get('name') for c in turn.calls]}")
    elif not leak_problems(turn):
        problems += empty_problems(turn)
    if turn.finish != "stop":
        problems.append(f"{turn.where}: finish_reason is {turn.finish!r}, expected 'stop'")
    return problems


def tool_choice_auto(s: Session, rec: Recorder) -> str:
    script = Script(s, rec, False)
    turn = script.send("turn 1", user(T.WEATHER_PROMPT), WEATHER_TOOLS, tool_choice="auto")
    problems = (
        leak_problems(turn) + call_problems(turn, WEATHER_TOOLS, 0, s.served.ids) + missing_call(turn, "get_weather")
    )
    plain = script.send("turn 2", user(T.NO_TOOL_PROMPT), WEATHER_TOOLS, tool_choice="auto")
    problems += _text_answer(plain, "tool_choice 'auto' and nothing needs a tool")
    return done(problems, "auto: a call when the question needs one, a plain answer when not")


def tool_choice_required(s: Session, rec: Recorder) -> str:
    turn = Script(s, rec, False).send("turn 1", user(T.HELLO_PROMPT), WEATHER_TOOLS, tool_choice="required")
    problems = leak_problems(turn) + call_problems(turn, WEATHER_TOOLS, 0, s.served.ids)
    if not turn.calls and not leak_problems(turn):
        problems.append(
            f"turn 1: tool_choice 'required' but no tool call came back (finish_reason {turn.finish!r}, content "
            f"{turn.content[:100]!r}); SGLang constrains decoding to a call (look for 'Required tool call missing' "
            "in the server log)"
        )
    return done(problems, f"required: {[c.get('name') for c in turn.calls]} called although the prompt needs no tool")


def tool_choice_none(s: Session, rec: Recorder) -> str:
    turn = Script(s, rec, False).send("turn 1", user(T.WEATHER_PROMPT), [T.GET_WEATHER], tool_choice="none")
    problems = _text_answer(turn, "tool_choice 'none'")
    return done(problems, "none: a plain answer, no call and no markers, although the prompt asks for the tool")


def tool_choice_named(s: Session, rec: Recorder) -> str:
    turn = Script(s, rec, False).send("turn 1", user(T.WEATHER_PROMPT), WEATHER_TOOLS, tool_choice=NAMED)
    problems = (
        leak_problems(turn) + call_problems(turn, WEATHER_TOOLS, 0, s.served.ids) + missing_call(turn, "get_time")
    )
    names = [c.get("name") for c in turn.calls]
    if turn.calls and set(names) != {"get_time"}:
        problems.append(f"turn 1: tool_choice names get_time, but the response calls {names}")
    return done(problems, "named: get_time called although the prompt asks about the weather")


def thinking_then_call(s: Session, rec: Recorder) -> str:
    turn = Script(s, rec, True).send("turn 1", user(T.WEATHER_PROMPT), [T.GET_WEATHER])
    problems = (
        leak_problems(turn) + call_problems(turn, [T.GET_WEATHER], 0, s.served.ids) + missing_call(turn, "get_weather")
    )
    if not turn.reasoning.strip() and not leak_problems(turn):
        problems.append("turn 1: no reasoning_content although thinking is on by default")
    if "reasoning" in turn.order and "tool_call" in turn.order:
        last_reasoning = len(turn.order) - 1 - turn.order[::-1].index("reasoning")
        if last_reasoning > turn.order.index("tool_call"):
            problems.append("turn 1: reasoning deltas arrived after the tool call had started")
    return done(problems, "reasoning streamed first, then the get_weather call")


def instant_then_call(s: Session, rec: Recorder) -> str:
    turn = Script(s, rec, False).send(
        "turn 1", user(T.WEATHER_PROMPT), [T.GET_WEATHER], chat_template_kwargs={"thinking": False}
    )
    problems = (
        leak_problems(turn) + call_problems(turn, [T.GET_WEATHER], 0, s.served.ids) + missing_call(turn, "get_weather")
    )
    if turn.reasoning.strip():
        problems.append(f"turn 1: reasoning_content ({len(turn.reasoning)} chars) although thinking=false")
    return done(problems, "thinking off: no reasoning, the get_weather call")


def weather_history() -> list[dict[str, Any]]:
    """A first turn as SGLang returns it (Kimi id, reasoning echoed), and the tool's result."""
    call_id = "functions.get_weather:0"
    return user(T.WEATHER_PROMPT) + [
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "The user wants the weather in Paris, so I call get_weather.",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"location": "Paris"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": T.result_for("get_weather")},
    ]


def follow_up(s: Session, rec: Recorder, stream: bool) -> str:
    turn = Script(s, rec, stream).send("turn 2", weather_history(), [T.GET_WEATHER])
    problems = _text_answer(turn, "the tool result is in; the answer was due")
    if turn.content.strip() and not mentions_any(turn.content, T.FACTS["get_weather"]):
        problems.append(f"turn 2: the answer does not use the tool result (18 degrees, clear): {turn.content[:160]!r}")
    return done(problems, "non-empty answer after the tool result, using it")


def leaks(s: Session, rec: Recorder, stream: bool) -> str:
    """Markers or think tags in content or reasoning, on a call turn, its follow-up and a tool_choice none turn."""
    script = Script(s, rec, stream)
    turns = [
        script.send("call turn", user(T.WEATHER_PROMPT), [T.GET_WEATHER]),
        script.send("follow-up", weather_history(), [T.GET_WEATHER]),
        script.send("tool_choice none", user(T.WEATHER_PROMPT), [T.GET_WEATHER], tool_choice="none"),
    ]
    problems = [p for turn in turns for p in leak_problems(turn)]
    return done(problems, "no tool-call markers or think tags in content or reasoning_content on 3 turns")


def truncated_call(s: Session, rec: Recorder, stream: bool) -> str:
    script = Script(s, rec, stream)
    turn = script.send(
        "turn 1",
        user(T.long_arguments_prompt()),
        [T.SAVE_DOCUMENT],
        tool_choice={"type": "function", "function": {"name": "save_document"}},
        chat_template_kwargs={"thinking": False},
        max_tokens=TRUNCATE_AT,
    )
    problems = leak_problems(turn)
    if turn.finish != "length":
        problems.append(
            f"turn 1: finish_reason is {turn.finish!r} although max_tokens={TRUNCATE_AT} cut the call; expected "
            "'length' (a client that sees 'tool_calls' runs a truncated call)"
        )
    partial = [c for c in turn.calls if c.get("arguments")]
    rec.details["partial_call_streamed"] = bool(partial) if stream else None
    if turn.calls and not stream:
        problems.append(
            f"turn 1: a call cut by max_tokens came back in tool_calls with incomplete arguments "
            f"{(turn.calls[0].get('arguments') or '')[-60:]!r}; SGLang drops it (truncated call kept)"
        )
    if stream:
        return done(
            problems,
            "finish_reason length; partial argument deltas "
            + ("were" if partial else "were not")
            + " streamed, as SGLang does: a client must not run a call that finished with 'length'",
        )
    return done(problems, "finish_reason length and no broken call in the response")
