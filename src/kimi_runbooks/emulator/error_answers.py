"""Error answers in the shapes SGLang's HTTP server gives them, one class per origin.

* ``ApiError``: the OpenAI serving layer's ErrorResponse
  (sglang/srt/entrypoints/openai/serving_base.py ``create_error_response``):
  ``{"object": "error", "message", "type", "param", "code"}``, type ``BadRequestError`` by default.
* ``ValidationFailed``: a body FastAPI could not parse into the request model (bad JSON, wrong
  content type, missing or mistyped field); SGLang turns it into a 400 ErrorResponse of type
  ``"Bad Request"`` (entrypoints/http_server.py ``validation_exception_handler``).
* ``RawError``: answers with their own body: 404/405 from the router (``{"detail": ...}``),
  401 from the API-key middleware (utils/auth.py, ``{"error": "Unauthorized"}``), /generate
  failures (``{"error": {"message": ...}}``, http_server.py ``_create_error_response``).

Every refusal goes through one of them, so a malformed request is always a 4xx JSON answer,
never a dead connection.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse


class ApiError(Exception):
    """A request the serving layer refuses."""

    def __init__(
        self, message: str, status: int = 400, param: str | None = None, err_type: str = "BadRequestError"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.err_type = err_type

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.status, self.param, self.err_type)


class ValidationFailed(ApiError):
    """Request validation failed before any handler ran (SGLang: FastAPI's RequestValidationError)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        count = len(errors)
        listing = "\n  ".join(str(e) for e in errors)
        message = f"{count} validation error{'s' if count != 1 else ''}:\n  {listing} {errors}"
        super().__init__(message, 400, None, "Bad Request")
        self.errors = errors


class RawError(Exception):
    """An answer whose body is not an ErrorResponse."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        super().__init__(str(body))
        self.status = status
        self.payload = body


def error_body(
    message: str, status: int, param: str | None = None, err_type: str = "BadRequestError"
) -> dict[str, Any]:
    return {"object": "error", "message": message, "type": err_type, "param": param, "code": status}


def error_response(err: ApiError | RawError) -> JSONResponse:
    if isinstance(err, RawError):
        return JSONResponse(err.payload, status_code=err.status)
    return JSONResponse(err.body(), status_code=err.status)
