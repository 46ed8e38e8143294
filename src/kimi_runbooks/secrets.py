"""Keep secrets out of everything the project writes.

Keys come from environment variables whose NAMES are parameters (`api_key_env`). Anything that
is written to a run folder (logs, manifest, transcripts, notebooks, HTML) passes through
`redact()`, which replaces the values of those variables, and of any variable that looks like a
secret (HF_TOKEN, OPENAI_API_KEY, ...), with `<redacted>`.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable

REDACTED = "<redacted>"
SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
MIN_SECRET_LENGTH = 4


def secret_values(extra_env_names: Iterable[str | None] = ()) -> list[str]:
    """Values of the named env vars plus every env var whose name looks secret."""
    names = {n for n in extra_env_names if n}
    names |= {n for n in os.environ if SECRET_NAME.search(n)}
    values = {os.environ[n] for n in names if len(os.environ.get(n, "")) >= MIN_SECRET_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(value: Any, extra_env_names: Iterable[str | None] = ()) -> Any:
    """The same structure with every secret value replaced; strings, lists and dicts are walked."""
    secrets = secret_values(extra_env_names)
    return _redact(value, secrets)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return re.sub(r"(--api-key[ =])(?!\"?\$\{)(\S+)", r"\1" + REDACTED, value)
    if isinstance(value, dict):
        return {k: _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact(v, secrets) for v in value)
    return value
