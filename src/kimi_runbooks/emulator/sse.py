"""Server-sent-event framing shared by every streaming endpoint."""

from __future__ import annotations

import json
from typing import Any

DONE = b"data: [DONE]\n\n"


def event(payload: dict[str, Any]) -> bytes:
    """One ``data: {json}`` event, compact like SGLang's orjson output."""
    return b"data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"
