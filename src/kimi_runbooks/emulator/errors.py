"""OpenAI-style error bodies, the shape SGLang's OpenAI layer returns.

Every rejection goes through ApiError so a malformed request always becomes a
4xx JSON object (never a 500, never a dead server), which is what probes and the
fuzz tests check.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    404: "NotFoundError",
    405: "MethodNotAllowedError",
    413: "RequestTooLargeError",
    500: "InternalServerError",
    503: "ServiceUnavailableError",
}


class ApiError(Exception):
    """A request the emulator refuses; becomes an error response."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param


def error_body(message: str, status: int, param: str | None = None) -> dict[str, Any]:
    return {
        "object": "error",
        "message": message,
        "type": _TYPES.get(status, "BadRequestError"),
        "param": param,
        "code": status,
    }


def error_response(err: ApiError) -> JSONResponse:
    return JSONResponse(error_body(err.message, err.status, err.param), status_code=err.status)
