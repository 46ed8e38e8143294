"""create_app: the Starlette application that speaks SGLang's HTTP API as Kimi-K2.6.

Wires routes to handlers and answers every refusal in the shape SGLang's FastAPI server
gives it (errors.py): handler errors as ErrorResponse, unknown routes and wrong methods as
``{"detail": ...}``, a missing or wrong API key as ``{"error": "Unauthorized"}`` from a
middleware that runs before routing (sglang/srt/utils/auth.py), a bug as a 500 JSON body
rather than a dead connection. Stamps the ``X-Emulated`` header unless strict (deviations.py)
and runs the simulated start phase. Like SGLang's FastAPI app it lets any origin in (CORS).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..kimi.tokenizer import bpe
from . import routes_chat, routes_completions, routes_info, routes_native
from .deviations import EMULATED_HEADER
from .error_answers import ApiError, RawError, error_response
from .openapi import Endpoint, Handler, openapi
from .protocol import ChatRequest, CompletionRequest, GenerateRequest
from .settings import EmulatorSettings
from .state import AppState

log = logging.getLogger(__name__)


def create_app(settings: EmulatorSettings | None = None) -> Starlette:
    """Build an emulator app; serve it with uvicorn (see cli.py and testing.py)."""
    settings = settings or EmulatorSettings()
    state = AppState(settings)
    app = Starlette(
        routes=_routes(),
        lifespan=functools.partial(_lifespan, state=state),
        exception_handlers={HTTPException: _http_exception},
    )
    app.state.emulator = state
    app.state.openapi = openapi(ENDPOINTS)
    # http_server.py: CORSMiddleware with everything allowed (its answers carry "vary: Origin")
    app.add_middleware(
        CORSMiddleware, allow_origins=["*"], allow_credentials=True, allow_methods=["*"], allow_headers=["*"]
    )
    app.add_middleware(FrontMiddleware, state=state)
    return app


ENDPOINTS = (
    Endpoint("/health", routes_info.health, "200 once the (simulated) start phase is over, else 503"),
    Endpoint("/health_generate", routes_info.health_generate, "Like /health"),
    Endpoint("/ready", routes_info.ready, "Like /health, JSON body"),
    Endpoint("/v1/models", routes_info.models, "Served model list"),
    Endpoint("/v1/models/{model:path}", routes_info.model_card, "One model card; 404 for another name"),
    Endpoint("/model_info", routes_info.get_model_info, "Model facts"),
    Endpoint("/get_model_info", routes_info.get_model_info, "Alias of /model_info"),
    Endpoint("/server_info", routes_info.get_server_info, "Resolved server args, version, capacity"),
    Endpoint("/get_server_info", routes_info.get_server_info, "Alias of /server_info"),
    Endpoint("/flush_cache", routes_info.flush_cache, "Flush the prefix cache", ("GET", "POST")),
    Endpoint("/metrics", routes_info.metrics, "Prometheus text, sglang:* names (with --enable-metrics)"),
    Endpoint("/openapi.json", routes_info.openapi_json, "This document"),
    Endpoint("/generate", routes_native.generate, "SGLang native generation", ("POST", "PUT"), GenerateRequest),
    Endpoint("/v1/completions", routes_completions.completions, "OpenAI completions", ("POST",), CompletionRequest),
    Endpoint("/v1/chat/completions", routes_chat.chat_completions, "OpenAI chat completions", ("POST",), ChatRequest),
)
"""Every path the emulator serves; /openapi.json is generated from this table (openapi.py)."""


def _routes() -> list[Route]:
    return [Route(e.path, _guarded(e.handler), methods=list(e.methods)) for e in ENDPOINTS]


def _guarded(handler: Handler) -> Handler:
    """Error mapping around one handler."""

    @functools.wraps(handler)
    async def wrapper(request: Request) -> Response:
        try:
            return await handler(request)
        except (ApiError, RawError) as err:
            return error_response(err)
        except Exception as exc:  # a bug: answer 500 JSON, keep serving
            log.exception("emulator handler %s failed", handler.__name__)
            return error_response(
                ApiError(f"Internal server error: {type(exc).__name__}", 500, err_type="InternalServerError")
            )

    return wrapper


async def _http_exception(request: Request, exc: Exception) -> Response:
    """Router refusals (unknown path, wrong method) as FastAPI answers them: {"detail": ...}."""
    status = getattr(exc, "status_code", 400)
    detail = getattr(exc, "detail", "error")
    return JSONResponse({"detail": detail}, status_code=status, headers=getattr(exc, "headers", None))


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette, state: AppState) -> AsyncIterator[None]:
    state.startup.restart()
    bpe()  # the tokenizer (~0.3 s) is built before the port answers, not inside the first request's TTFT
    task = asyncio.create_task(state.startup.print_phases())
    await state.disagg.start_bootstrap_server()  # a PD prefill server's bootstrap port (disagg.py)
    try:
        yield
    finally:
        await state.disagg.stop_bootstrap_server()
        if state.disagg.active:  # what this pool served, for the run's log (the router test reads it)
            log.warning(
                "PD %s server: served %d requests with a bootstrap room", state.disagg.mode, state.disagg.requests
            )
        else:  # a plain server (a replica behind sglang-router: the replicas runbook test reads it)
            served = sum(state.engine.metrics.requests_total.values())
            log.warning("server: finished %d generation requests", served)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class FrontMiddleware:
    """Before routing: the API-key check (as SGLang's middleware); on the way out: ``X-Emulated``."""

    def __init__(self, app: ASGIApp, state: AppState) -> None:
        self.app = app
        self.state = state
        self.header = (EMULATED_HEADER[0].lower().encode(), EMULATED_HEADER[1].encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            self.state.check_auth(Request(scope, receive=receive))
        except RawError as err:
            await error_response(err)(scope, receive, self._stamp(send))
            return
        await self.app(scope, receive, self._stamp(send))

    def _stamp(self, send: Send) -> Send:
        if not self.state.settings.marked:
            return send

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append(self.header)
                message = {**message, "headers": headers}
            await send(message)

        return send_with_header
