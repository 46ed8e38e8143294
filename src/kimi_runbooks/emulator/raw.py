"""The raw text the emulated model generates for a chat request, in its parser's format.

A server answers with what SGLang's parsers make of the model's raw output; the emulator plans
that output as token events and answers directly. This module writes the same plan out as the raw
engine output (one piece per generated token, markers included; formats.py), so the contract
suite can hand it to SGLang's own serving layer and parsers and hold the emulator's answer to
theirs (tests/contract/test_parser_formats.py). Nothing here is served.
"""

from __future__ import annotations

from typing import Any

from .chat_input import read_chat
from .formats import RawTurn
from .protocol import ChatRequest, parse_body
from .routes_chat import history_calls, plan_choice
from .settings import EmulatorSettings
from .state import AppState


def raw_chat_output(settings: EmulatorSettings, body: dict[str, Any]) -> dict[str, Any]:
    """For a chat body the emulator accepts: the engine's prompt tokens and, per choice, the raw
    pieces, how many are reasoning tokens and how generation ended ("stop" or "length")."""
    state = AppState(settings)
    req = parse_body(ChatRequest, body)
    chat = read_chat(req, video=settings.capabilities.video, media=settings.capabilities.images)
    thinks = settings.capabilities.model_thinks(req.thinking)
    choices = []
    for index in range(req.n):
        plan = plan_choice(state, req, chat, index)
        finished = plan.finish_reason != "length"
        turn = RawTurn(plan.events, plan.tool_calls, history_calls(req), thinks, finished)
        choices.append(
            {
                "pieces": settings.chat_format.render(turn),
                "reasoning_tokens": sum(1 for e in plan.events if e.kind == "reasoning"),
                "finish": "stop" if finished else "length",
            }
        )
    return {"prompt_tokens": chat.prompt_tokens, "choices": choices}
