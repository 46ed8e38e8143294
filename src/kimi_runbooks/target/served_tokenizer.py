"""Which tokenizer is the served model's: one choice for every stage that counts tokens.

The invoke stage (the Vendor Verifier's prompt-token check) and the speed stage (bench_serving's
prompt sizes and the token probe) both count in the served model's tokens, so both take it from the
same places, in this order: the run's `tokenizer` parameter, the handle's (a launcher that knows it:
sglang-cpu's tiny checkpoint), the deployed plan's `model_path` (never for an external server,
whose weights the plan does not describe).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rundir import RunFolder

PASS_IT = (
    "pass tokenizer=<local directory with the model's tokenizer.json> (runbook: -p tokenizer DIR; for a GGUF "
    "model, export it: tools/scripts/gguf_tokenizer.py), or deploy with model_path"
)
"""The fix every stage gives when no tokenizer of the served model is known."""


@dataclass(frozen=True)
class TokenizerChoice:
    path: str
    source: str
    """Where it came from, as a user would say it ('the tokenizer parameter', ...)."""

    def __str__(self) -> str:
        return f"{self.path} ({self.source})"


def model_path_of(folder: RunFolder | None) -> str | None:
    """The deployed plan's model_path (manifest), for launchers that started the model themselves."""
    if folder is None:
        return None
    manifest = folder.read_json(RunFolder.MANIFEST) or {}
    if manifest.get("launcher") == "external":
        return None  # the plan's model_path says nothing about someone else's server
    config = (manifest.get("plan") or {}).get("config") or {}
    value = config.get("model_path")
    return str(value) if value else None


def served_tokenizer(
    tokenizer: str | Path | None,
    target: Any,
    *,
    model_path: str | None = None,
    folder: RunFolder | None = None,
) -> TokenizerChoice | None:
    """The served model's tokenizer: the given one, the handle's, the deployed model_path (given, or
    read from the run folder's manifest); None when none is known."""
    if tokenizer:
        return TokenizerChoice(str(tokenizer), "the tokenizer parameter")
    from_handle = getattr(target, "tokenizer", None)
    if from_handle:
        return TokenizerChoice(str(from_handle), "the handle (handle.json tokenizer)")
    model_path = model_path or model_path_of(folder)
    if model_path:
        return TokenizerChoice(model_path, "the deployed plan's model_path")
    return None
