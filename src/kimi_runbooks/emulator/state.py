"""Per-app shared state and the checks every generation handler runs first.

One AppState per create_app call (not module globals), so several emulators can run
in one test process without sharing queues, counters or fault draws.
"""

from __future__ import annotations

import hmac
import json
import random
import time
from typing import Any, TypeVar

from pydantic import BaseModel
from starlette.requests import Request

from .content import seeded_rng
from .disagg import from_launch_args
from .engine import Engine
from .error_answers import ApiError, RawError, ValidationFailed
from .protocol import parse_body
from .server_info import max_req_input_len
from .settings import EmulatorSettings
from .startup import StartupClock

MAX_BODY_BYTES = 64 * 1024 * 1024
# Open without a key, matched by prefix (sglang/srt/utils/auth.py decide_request_auth).
OPEN_PATHS = ("/health", "/ready", "/metrics")
Body = TypeVar("Body", bound=BaseModel)


class AppState:
    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self.engine = Engine(settings)
        self.disagg = from_launch_args(settings.launch_args, settings.time_scale, settings.host)
        self.engine.on_prefilled = self.disagg.kv_sent
        self.startup = StartupClock(settings)
        self._ids = 0
        self.flush_waiting = False
        """A /flush_cache is waiting for the engine to go idle (SGLang runs one at a time)."""

    def next_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}-{self.settings.seed:x}{self._ids:08x}{int(time.time() * 1000) & 0xFFFFFF:06x}"

    def rng_for(self, *parts: Any) -> random.Random:
        return seeded_rng(self.settings.seed, *parts)

    def check_auth(self, request: Request) -> None:
        """401 unless the bearer token matches (health, ready and metrics stay open, as in SGLang)."""
        key = self.settings.api_key
        if not key or request.method == "OPTIONS" or request.url.path.startswith(OPEN_PATHS):
            return
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.encode(), key.encode()):
            raise RawError(401, {"error": "Unauthorized"})

    def check_ready(self) -> None:
        if not self.startup.ready:
            raise ApiError("The server is still starting (emulated start phase).", 503)

    def check_context(self, prompt_tokens: int, max_new_tokens: int | None) -> None:
        limit = self.settings.max_model_len
        if prompt_tokens >= limit:
            raise ApiError(
                f"The input ({prompt_tokens} tokens) is longer than the model's context length ({limit} tokens)."
            )
        if max_new_tokens is not None and prompt_tokens + max_new_tokens > limit:
            raise ApiError(
                f"Requested token count exceeds the model's maximum context length of {limit} "
                f"tokens. You requested a total of {prompt_tokens + max_new_tokens} tokens: "
                f"{prompt_tokens} tokens from the input messages and {max_new_tokens} tokens for "
                f"the completion. Please reduce the number of tokens in the input messages or "
                f"the completion to fit within the limit."
            )

    def input_too_long(self, prompt_tokens: int) -> str | None:
        """SGLang's scheduler refusal of an input the KV pool or context cannot hold (validate_input_length,
        managers/utils.py): the request is aborted, a 400 BadRequestError or one streamed error event."""
        allowed = max_req_input_len(self.settings.max_model_len, self.settings.profile.max_total_num_tokens)
        if prompt_tokens < allowed:
            return None
        return (
            f"Input length ({prompt_tokens} tokens) exceeds the maximum allowed length ({allowed} tokens). "
            "Use a shorter input or enable --allow-auto-truncate."
        )

    def check_injected_500(self) -> None:
        if self.engine.faults.should_fail_http_500():
            raise ApiError("Internal server error: emulated fault http-500-rate", 500, err_type="InternalServerError")

    async def read_request(
        self, request: Request, model: type[Body], json_only: bool = True
    ) -> tuple[float, Any, Body]:
        """(arrival time, decoded body, validated body) of a generation request, refused while the
        server is starting: the opening every generation route shares."""
        arrival = time.monotonic()
        self.check_ready()
        raw = await self.read_json(request, json_only)
        return arrival, raw, parse_body(model, raw)

    async def read_json(self, request: Request, json_only: bool = True) -> Any:
        """The decoded body; refusals shaped like FastAPI's validation errors in SGLang.

        ``json_only``: the OpenAI routes accept only ``application/json``
        (http_server.py ``validate_json_request``); /generate does not check.
        """
        media = request.headers.get("content-type", "").lower().split(";", 1)[0].strip()
        if json_only and media != "application/json":
            raise ValidationFailed(
                [
                    {
                        "loc": ["header", "content-type"],
                        "msg": ("Unsupported Media Type: Only 'application/json' is allowed"),
                        "type": "value_error",
                    }
                ]
            )
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            raise ApiError("Request body too large.", 413)
        if not body.strip():
            raise ValidationFailed([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
        try:
            return json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise ValidationFailed(
                [
                    {
                        "type": "json_invalid",
                        "loc": ("body", 0),
                        "msg": "JSON decode error",
                        "input": {},
                        "ctx": {"error": str(exc)[:200]},
                    }
                ]
            ) from None
