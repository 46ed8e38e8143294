"""The invoke stage's settings (`InvokeOptions`): which server, which checks, how they are sent.

One typed declaration for `run(folder, options)`, `run_all(handle, options)` and the notebook's
parameters cell (written from these fields, scripts/notebook_cells); a misspelt setting fails with
the valid names instead of passing silently."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InvokeOptions(BaseModel):
    """The invoke stage's parameters. Each field's docstring is the comment beside it in the
    notebook's parameters cell."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    base_url: str | None = None
    """A running server, e.g. "http://127.0.0.1:30000"; None: the run folder's handle.json."""
    model: str | None = None
    """Served model name; None: the handle's, or (with base_url) what /v1/models lists."""
    api_key_env: str | None = None
    """NAME of the env var holding the API key (never the key itself)."""
    timeout: float = Field(default=300.0, gt=0)
    """Seconds per request, streamed or not."""
    checks: list[str] | None = None
    """Check, agentic case or contract names; None: the feature checks and agentic cases that apply to the model."""
    max_tokens_thinking: int = Field(default=8192, gt=0)
    """max_tokens for every generation (Kimi thinks by default)."""
    image_expect: str | None = None
    """Text the receipt answer must mention; None: the drawn item name."""
    image_url: str | None = None
    """Optional image URL for servers with internet access."""
    video_url: str | None = None
    """Optional video URL for a model that declares video input."""
    concurrency: int = 4
    """Parallel requests in the concurrency smoke test; below 2 skips it."""
    parallel: int = Field(default=4, ge=1)
    """Checks run this many at a time (1: one after another; the concurrency check runs alone)."""
    emulated: bool | None = None
    """Whether the server is the emulator; None: ask it."""
    fail_on_error: bool = False
    """Raise at the end when any check failed."""
    tokenizer: str | None = None
    """The served model's tokenizer (local dir) for the prompt-token check; None: the handle's or model_path."""
