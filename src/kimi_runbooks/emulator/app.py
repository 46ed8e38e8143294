"""create_app: the Starlette application that speaks SGLang's HTTP API as Kimi-K2.6.

Wires routes to handlers, wraps every handler so refusals become OpenAI-style 4xx
errors (and bugs a 500 JSON body rather than a dead connection), checks the API
key, stamps ``X-Emulated`` on every response and runs the simulated start phase.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import routes_info, routes_native, routes_openai
from .errors import ApiError, error_response
from .settings import EmulatorSettings
from .state import AppState

log = logging.getLogger(__name__)

EMULATED_HEADER = (b"x-emulated", b"kimi-runbooks")
Handler = Callable[[Request], Awaitable[Response]]


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
    app.add_middleware(EmulatedHeaderMiddleware)
    return app


def _routes() -> list[Route]:
    get, post, both = ["GET"], ["POST"], ["GET", "POST"]
    table: list[tuple[str, Handler, list[str]]] = [
        ("/health", routes_info.health, get),
        ("/health_generate", routes_info.health_generate, get),
        ("/ready", routes_info.ready, get),
        ("/v1/models", routes_info.models, get),
        ("/model_info", routes_info.get_model_info, get),
        ("/get_model_info", routes_info.get_model_info, get),
        ("/server_info", routes_info.get_server_info, get),
        ("/get_server_info", routes_info.get_server_info, get),
        ("/flush_cache", routes_info.flush_cache, both),
        ("/metrics", routes_info.metrics, get),
        ("/openapi.json", routes_info.openapi_json, get),
        ("/generate", routes_native.generate, post),
        ("/v1/completions", routes_openai.completions, post),
        ("/v1/chat/completions", routes_openai.chat_completions, post),
    ]
    return [Route(path, _guarded(handler), methods=methods) for path, handler, methods in table]


def _guarded(handler: Handler) -> Handler:
    """Auth check plus error mapping around one handler."""

    @functools.wraps(handler)
    async def wrapper(request: Request) -> Response:
        try:
            request.app.state.emulator.check_auth(request)
            return await handler(request)
        except ApiError as err:
            return error_response(err)
        except Exception as exc:  # a bug: answer 500 JSON, keep serving
            log.exception("emulator handler %s failed", handler.__name__)
            return error_response(ApiError(f"Internal error: {type(exc).__name__}", 500))

    return wrapper


async def _http_exception(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 400)
    detail = getattr(exc, "detail", "error")
    return error_response(ApiError(f"{detail}: {request.method} {request.url.path}", status))


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette, state: AppState):
    state.startup.restart()
    task = asyncio.create_task(state.startup.print_phases())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class EmulatedHeaderMiddleware:
    """Adds ``X-Emulated: kimi-runbooks`` to every HTTP response, streaming ones included."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append(EMULATED_HEADER)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_header)
