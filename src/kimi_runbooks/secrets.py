"""Keep secrets out of everything the project writes.

Keys come from environment variables whose NAMES are parameters (`api_key_env`). Anything that
is written to a run folder (logs, manifest, transcripts, notebooks, HTML) passes through
`redact()`, which replaces the values of those variables, and of any variable that looks like a
secret (HF_TOKEN, OPENAI_API_KEY, ...), with `<redacted>`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Any

REDACTED = "<redacted>"
# Names that end like a credential (HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD);
# not MAX_TOKENS or TOKENIZERS_PARALLELISM, whose values are ordinary words and numbers.
SECRET_NAME = re.compile(r"(^|_)(API_KEY|ACCESS_KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
MIN_NAMED_LENGTH = 4  # a variable named as the key (api_key_env): always redacted
MIN_GUESSED_LENGTH = 8  # a variable that only looks secret: long values only, to spare short words
SECRET_FIELDS = {"api_key", "api-key", "apikey", "authorization", "hf_token"}


def secret_values(extra_env_names: Iterable[str | None] = (), environ: dict[str, str] | None = None) -> list[str]:
    """Values of the named env vars plus those of env vars whose name looks like a credential."""
    env = os.environ if environ is None else environ
    named = {n for n in extra_env_names if n}
    values = {env[n] for n in named if len(env.get(n, "")) >= MIN_NAMED_LENGTH}
    values |= {v for n, v in env.items() if SECRET_NAME.search(n) and len(v) >= MIN_GUESSED_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(value: Any, extra_env_names: Iterable[str | None] = (), environ: dict[str, str] | None = None) -> Any:
    """The same structure with every secret value replaced; strings, lists and dicts are walked,
    and a dict value under a credential-like key (api_key, authorization, ...) is replaced whole."""
    secrets = secret_values(extra_env_names, environ)
    return _redact(value, secrets)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
        return re.sub(r"(--api-key[ =])(?!\"?\$\{)(\S+)", r"\1" + REDACTED, value)
    if isinstance(value, dict):
        return {k: (REDACTED if _is_secret_field(k, v) else _redact(v, secrets)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact(v, secrets) for v in value)
    return value


def _is_secret_field(key: Any, value: Any) -> bool:
    return isinstance(key, str) and key.lower() in SECRET_FIELDS and isinstance(value, str) and bool(value)
