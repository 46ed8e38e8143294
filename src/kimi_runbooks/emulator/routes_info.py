"""Health, model/server info, cache flush and metrics endpoints.

These are what a deploy stage polls and records; during the simulated start phase the
health endpoints answer an empty 503 like a warming-up SGLang server, then an empty 200
(sglang/srt/entrypoints/http_server.py ``health_generate``, ``ready``). Model cards are
``ModelCard`` dumps (id and root = the served name); an unknown id in /v1/models/{id} gets
SGLang's 404 body (http_server.py ``retrieve_model``).
"""

from __future__ import annotations

import asyncio
import time

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from .error_answers import RawError
from .server_info import model_info, server_info
from .state import AppState


def _state(request: Request) -> AppState:
    state: AppState = request.app.state.emulator
    return state


def _up_or_503(request: Request) -> Response:
    return Response(status_code=200 if _state(request).startup.ready else 503)


async def health(request: Request) -> Response:
    return _up_or_503(request)


async def health_generate(request: Request) -> Response:
    return _up_or_503(request)


async def ready(request: Request) -> Response:
    return _up_or_503(request)


def _card(name: str, context: int) -> dict[str, object]:
    return {
        "id": name,
        "object": "model",
        "created": int(time.time()),
        "owned_by": "sglang",
        "root": name,
        "parent": None,
        "max_model_len": context,
    }


async def models(request: Request) -> Response:
    settings = _state(request).settings
    return JSONResponse({"object": "list", "data": [_card(settings.served_model_name, settings.max_model_len)]})


async def model_card(request: Request) -> Response:
    settings = _state(request).settings
    name = request.path_params["model"]
    if name != settings.served_model_name:
        return JSONResponse(
            {
                "error": {
                    "message": f"The model '{name}' does not exist",
                    "type": "invalid_request_error",
                    "param": "model",
                    "code": "model_not_found",
                }
            },
            status_code=404,
        )
    return JSONResponse(_card(name, settings.max_model_len))


async def get_model_info(request: Request) -> Response:
    return JSONResponse(model_info(_state(request).settings))


async def get_server_info(request: Request) -> Response:
    state = _state(request)
    return JSONResponse(server_info(state.settings, state.engine.metrics.last_gen_throughput, state.startup.duration))


FLUSH_POLL_S = 0.01
"""How often a flush waiting for the engine to go idle looks again (SGLang checks once per scheduler step)."""


def _flush_timeout(request: Request) -> float:
    """The `timeout` query parameter as SGLang's FastAPI route reads it (float, ge=0, default 0)."""
    raw = request.query_params.get("timeout")
    if raw is None:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        msg = "Input should be a valid number, unable to parse string as a number"
        raise RawError(
            422, {"detail": [{"type": "float_parsing", "loc": ["query", "timeout"], "msg": msg, "input": raw}]}
        ) from None
    if not value >= 0.0:
        msg = "Input should be greater than or equal to 0"
        detail = {
            "type": "greater_than_equal",
            "loc": ["query", "timeout"],
            "msg": msg,
            "input": raw,
            "ctx": {"ge": 0.0},
        }
        raise RawError(422, {"detail": [detail]})
    return value


async def flush_cache(request: Request) -> Response:
    """SGLang 0.5.23's /flush_cache (http_server.py, scheduler_components/flush_wrapper.py): with
    `timeout` > 0 a busy engine is waited for until idle (bench_serving --flush-cache sends 60 s right
    after its warm-up, whose request may still be finishing), then flushed; one flush at a time; a
    busy engine with no timeout, or still busy at the deadline, is not flushed (400)."""
    state = _state(request)
    engine, scheduler = state.engine, state.engine.scheduler
    timeout = _flush_timeout(request)
    if state.flush_waiting:
        return Response("Another flush_cache is already in progress.", status_code=400)

    def busy() -> bool:
        return bool(scheduler.running or scheduler.queued)

    if busy() and timeout > 0:
        state.flush_waiting = True
        try:
            deadline = time.monotonic() + timeout
            while busy() and time.monotonic() < deadline:
                await asyncio.sleep(FLUSH_POLL_S)
        finally:
            state.flush_waiting = False
        if busy():  # SGLang: Response without a media type
            return Response("Timed out waiting for idle state.", status_code=400)
    if busy():
        return Response("Flush cache failed.\n", status_code=400)
    engine.cache.reset()  # the radix tree (radix.py), as SGLang's flush_cache resets its tree cache
    return Response(
        "Cache flushed.\nPlease check backend logs for more details. "
        "(When there are running or waiting requests, the operation will "
        "not be performed.)\n"
    )


async def metrics(request: Request) -> Response:
    state = _state(request)
    if not state.settings.enable_metrics:
        # SGLang mounts /metrics only with --enable-metrics (http_server.py): the router's 404
        raise RawError(404, {"detail": "Not Found"})
    engine = state.engine
    s = engine.scheduler
    body = engine.metrics.render(s.running, s.queued, s.token_usage, s.pool_used, engine.profile.max_total_num_tokens)
    return PlainTextResponse(body, media_type="text/plain; version=0.0.4; charset=utf-8")


async def openapi_json(request: Request) -> Response:
    """The document create_app generated from its route table (openapi.py)."""
    return JSONResponse(request.app.state.openapi)
