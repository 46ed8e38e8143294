"""The OpenAPI document the emulator serves at /openapi.json, generated from what it serves.

SGLang's FastAPI server derives its document from its routes and its pydantic request models;
the emulator does the same: each path, method and summary comes from the route table (app.py
ENDPOINTS) and each request body's schema from the pydantic model the handler validates with
(protocol.py), so the document cannot drift from what the emulator accepts. The authoritative
shapes remain SGLang's and OpenAI's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Awaitable[Response]]

_ERROR = {
    "type": "object",
    "properties": {
        "object": {"const": "error"},
        "message": {"type": "string"},
        "type": {"type": "string"},
        "param": {"type": ["string", "null"]},
        "code": {"type": "integer"},
    },
}
_SCHEMAS = "#/components/schemas/{model}"


@dataclass(frozen=True)
class Endpoint:
    """One path the emulator serves: the handler, its methods, and what the document says of it.
    ``body`` is the pydantic model the handler validates its JSON body with; such a route also
    streams (text/event-stream) when the body asks for stream=true."""

    path: str
    handler: Handler
    summary: str
    methods: tuple[str, ...] = ("GET",)
    body: type[BaseModel] | None = None


def _operation(endpoint: Endpoint, body_schema: dict[str, Any] | None) -> dict[str, Any]:
    ok = "OK" + (" (text/event-stream when stream=true)" if endpoint.body else "")
    operation: dict[str, Any] = {
        "summary": endpoint.summary,
        "responses": {
            "200": {"description": ok},
            "400": {"description": "Bad request", "content": {"application/json": {"schema": _ERROR}}},
            "401": {"description": "Missing or wrong API key"},
        },
    }
    if body_schema is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body_schema}}}
    return operation


def openapi(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``endpoints`` (the emulator's route table)."""
    bodies = list(dict.fromkeys(e.body for e in endpoints if e.body is not None))
    schemas, components = models_json_schema([(b, "validation") for b in bodies], ref_template=_SCHEMAS)
    paths: dict[str, dict[str, Any]] = {}
    for endpoint in endpoints:
        path = re.sub(r"\{(\w+):\w+\}", r"{\1}", endpoint.path)  # Starlette's {model:path} -> {model}
        for method in endpoint.methods:
            body_schema = schemas[(endpoint.body, "validation")] if endpoint.body else None
            paths.setdefault(path, {})[method.lower()] = _operation(endpoint, body_schema)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kimi-runbooks SGLang emulator (EMULATED)",
            "version": "0.5.23-emulated",
            "description": "CPU test double speaking SGLang's HTTP API as Kimi-K2.6 would.",
        },
        "paths": paths,
        "components": {"schemas": components.get("$defs", {})},
    }
