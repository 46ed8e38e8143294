"""Health, model/server info, cache flush and metrics endpoints.

These are what a deploy stage polls and records; during the simulated start
phase the health endpoints answer 503 like a warming-up SGLang server.
"""

from __future__ import annotations

import time

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from .errors import ApiError
from .openapi import openapi
from .server_info import model_info, server_info
from .state import AppState


def _state(request: Request) -> AppState:
    return request.app.state.emulator


async def health(request: Request) -> Response:
    _state(request).check_ready()
    return Response(status_code=200)


async def health_generate(request: Request) -> Response:
    _state(request).check_ready()
    return Response(status_code=200)


async def ready(request: Request) -> Response:
    state = _state(request)
    state.check_ready()
    return JSONResponse({"status": "ready", "emulated": True})


async def models(request: Request) -> Response:
    settings = _state(request).settings
    return JSONResponse(
        {
            "object": "list",
            "data": [
                {
                    "id": settings.served_model_name,
                    "object": "model",
                    "created": int(time.time()),
                    "owned_by": "sglang",
                    "root": settings.resolved_model_path,
                    "max_model_len": settings.max_model_len,
                }
            ],
        }
    )


async def get_model_info(request: Request) -> Response:
    return JSONResponse(model_info(_state(request).settings))


async def get_server_info(request: Request) -> Response:
    state = _state(request)
    return JSONResponse(server_info(state.settings, state.engine.metrics.last_gen_throughput))


async def flush_cache(request: Request) -> Response:
    scheduler = _state(request).engine.scheduler
    if scheduler.running or scheduler.queued:
        return PlainTextResponse("Cache not flushed: there are running or waiting requests.\n", status_code=400)
    return PlainTextResponse(
        "Cache flushed.\nPlease check backend logs for more details. "
        "(When there are running or waiting requests, the operation will "
        "not be performed.)\n"
    )


async def metrics(request: Request) -> Response:
    engine = _state(request).engine
    s = engine.scheduler
    body = engine.metrics.render(s.running, s.queued, s.token_usage, s.used_tokens)
    return PlainTextResponse(body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def openapi_json(request: Request) -> Response:
    return JSONResponse(openapi())


async def not_allowed(request: Request) -> Response:
    raise ApiError(f"Method {request.method} not allowed on {request.url.path}.", 405)
