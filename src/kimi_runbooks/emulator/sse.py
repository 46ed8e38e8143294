"""Server-sent-event framing shared by every streaming endpoint."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

DONE = b"data: [DONE]\n\n"


def event(payload: dict[str, Any]) -> bytes:
    """One ``data: {json}`` event, compact like SGLang's orjson output."""
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


async def error_events(message: str, err_type: str = "BadRequestError", status: int = 400) -> AsyncIterator[bytes]:
    """A stream refused after its headers went out: one ErrorResponse event (serving_base.py
    ``create_streaming_error_response``, plain ``json.dumps``), then ``[DONE]``."""
    error = {"object": "error", "message": message, "type": err_type, "param": None, "code": status}
    yield b"data: " + json.dumps({"error": error}).encode() + b"\n\n"
    yield DONE
