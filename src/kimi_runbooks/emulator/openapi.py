"""A hand-written OpenAPI 3 description of the emulator's endpoints.

Minimal on purpose: enough for a fuzzer or a reader to know each path, method and
the main body fields; the authoritative shapes are SGLang's and OpenAI's.
"""

from __future__ import annotations

from typing import Any

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

_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}, {"type": "null"}]},
        "tool_call_id": {"type": "string"},
        "tool_calls": {"type": "array"},
    },
}

_CHAT = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string"},
        "messages": {"type": "array", "minItems": 1, "items": _MESSAGE},
        "max_tokens": {"type": "integer", "minimum": 0},
        "max_completion_tokens": {"type": "integer", "minimum": 0},
        "temperature": {"type": "number", "minimum": 0},
        "top_p": {"type": "number"},
        "stream": {"type": "boolean"},
        "stream_options": {"type": "object"},
        "tools": {"type": "array"},
        "tool_choice": {},
        "ignore_eos": {"type": "boolean"},
        "chat_template_kwargs": {"type": "object"},
    },
}

_COMPLETION = {
    "type": "object",
    "required": ["model", "prompt"],
    "properties": {
        "model": {"type": "string"},
        "prompt": {"oneOf": [{"type": "string"}, {"type": "array"}]},
        "max_tokens": {"type": "integer", "minimum": 0},
        "stream": {"type": "boolean"},
        "ignore_eos": {"type": "boolean"},
        "echo": {"type": "boolean"},
    },
}

_GENERATE = {
    "type": "object",
    "properties": {
        "text": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "input_ids": {"type": "array"},
        "sampling_params": {
            "type": "object",
            "properties": {
                "max_new_tokens": {"type": "integer", "minimum": 0},
                "ignore_eos": {"type": "boolean"},
                "temperature": {"type": "number", "minimum": 0},
            },
        },
        "stream": {"type": "boolean"},
    },
}


def _op(summary: str, body: dict[str, Any] | None = None, stream: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {
            "200": {"description": "OK" + (" (text/event-stream when stream=true)" if stream else "")},
            "400": {"description": "Bad request", "content": {"application/json": {"schema": _ERROR}}},
            "401": {"description": "Missing or wrong API key"},
        },
    }
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    return op


def openapi() -> dict[str, Any]:
    """The OpenAPI document served at /openapi.json."""

    def get(summary: str) -> dict[str, Any]:
        return {"get": _op(summary)}

    return {
        "openapi": "3.0.3",
        "info": {
            "title": "kimi-runbooks SGLang emulator (EMULATED)",
            "version": "0.5.23-emulated",
            "description": "CPU test double speaking SGLang's HTTP API as Kimi-K2.6 would.",
        },
        "paths": {
            "/health": get("200 once the (simulated) start phase is over, else 503"),
            "/health_generate": get("Like /health"),
            "/ready": get("Like /health, JSON body"),
            "/v1/models": get("Served model list"),
            "/v1/models/{model}": get("One model card; 404 for another name"),
            "/model_info": get("Model facts"),
            "/get_model_info": get("Alias of /model_info"),
            "/server_info": get("Resolved server args, version, capacity"),
            "/get_server_info": get("Alias of /server_info"),
            "/metrics": get("Prometheus text, sglang:* names"),
            "/flush_cache": {"get": _op("Flush the prefix cache"), "post": _op("Flush the prefix cache")},
            "/v1/chat/completions": {"post": _op("OpenAI chat completions", _CHAT, True)},
            "/v1/completions": {"post": _op("OpenAI completions", _COMPLETION, True)},
            "/generate": {"post": _op("SGLang native generation", _GENERATE, True)},
        },
    }
