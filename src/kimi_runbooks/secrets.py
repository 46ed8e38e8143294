"""Keep secrets out of everything the project writes.

Keys come from environment variables whose NAMES are parameters (`api_key_env`). Anything that
is written to a run folder (logs, manifest, transcripts, notebooks, HTML) passes through
`redact()`, which replaces the values of those variables, and of any variable that looks like a
secret (HF_TOKEN, OPENAI_API_KEY, ...), with `<redacted>`.

A key named as the run's key is redacted whatever its length: it is never skipped. A key shorter
than MIN_KEY_LENGTH is refused when a run starts (`require_redactable`), because such a string
turns up in ordinary text (a 2-letter key in words, numbers and ids) and replacing it everywhere
would garble every log and report while protecting almost nothing.

Every byte is redacted, in every spelling a writer may have given the key: as is, JSON-escaped
(json.dumps, and plotly's `\\u003c`/`\\u002f` escapes), and HTML-escaped. The replacement is literal
and keeps the container valid: `<redacted>` in plain text and JSON strings (no quote, no backslash);
in HTML (`redact_html`) `&lt;redacted&gt;` in text, attributes and comments, so a browser shows it, and
`[redacted]` inside `<script>` and `<style>`, where entities are not decoded and a plotly figure's JSON
must still parse.
"""

from __future__ import annotations

import codecs
import functools
import html
import json
import os
import re
from collections.abc import Iterable
from typing import IO, Any

REDACTED = "<redacted>"
REDACTED_HTML = html.escape(REDACTED)
"""The marker as HTML text: `<redacted>` itself would be read as an (unknown, invisible) tag."""
# Names that end like a credential (HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY, DB_PASSWORD);
# not MAX_TOKENS or TOKENIZERS_PARALLELISM, whose values are ordinary words and numbers.
SECRET_NAME = re.compile(r"(^|_)(API_KEY|ACCESS_KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
MIN_KEY_LENGTH = 8  # a run's named key shorter than this is refused at start
MIN_GUESSED_LENGTH = 8  # a variable that only looks secret: long values only, to spare short words
SECRET_FIELDS = {"api_key", "api-key", "apikey", "authorization", "hf_token"}
NOT_SECRET_NAMES = frozenset({"KIMI_RUNBOOKS_RUN_TOKEN"})
"""Names that look like a credential but are not one: procs.RUN_TOKEN_ENV only marks a run's processes,
and the registry must keep it to find them (redacted, an orphan's bench client was never swept)."""
_API_KEY_FLAG = re.compile(r"(--api-key[ =])(?!\"?\$\{)(\S+)")


class SecretError(ValueError):
    """The run's key cannot be kept out of the run folder reliably; nothing was started."""


def require_redactable(name: str | None, environ: dict[str, str] | None = None) -> None:
    """Refuse a named key whose value is set but shorter than MIN_KEY_LENGTH (see the module doc)."""
    env = os.environ if environ is None else environ
    value = env.get(name or "", "")
    if name and value and len(value) < MIN_KEY_LENGTH:
        raise SecretError(
            f"the key in ${name} is {len(value)} characters long; keys shorter than {MIN_KEY_LENGTH} "
            "cannot be kept out of logs and reports (such a string occurs in ordinary text, and "
            f"redacting it everywhere would garble them). Fix: use a longer key, e.g. "
            f"export {name}=$(openssl rand -hex 16)."
        )


def secret_values(extra_env_names: Iterable[str | None] = (), environ: dict[str, str] | None = None) -> list[str]:
    """Values of the named env vars plus those of env vars whose name looks like a credential."""
    env = os.environ if environ is None else environ
    named = {n for n in extra_env_names if n}
    values = {env[n] for n in named if env.get(n)}
    guessed = (n for n in env if n not in NOT_SECRET_NAMES and SECRET_NAME.search(n))
    values |= {env[n] for n in guessed if len(env[n]) >= MIN_GUESSED_LENGTH}
    return sorted(values, key=len, reverse=True)


def redact(value: Any, extra_env_names: Iterable[str | None] = (), environ: dict[str, str] | None = None) -> Any:
    """The same structure with every secret value replaced; strings, lists and dicts are walked,
    and a dict value under a credential-like key (api_key, authorization, ...) is replaced whole."""
    secrets = secret_values(extra_env_names, environ)
    return _redact(value, secrets)


REDACTED_CODE = "[redacted]"
"""The marker inside <script> and <style>: valid in a JSON or JS string and in CSS, and visible."""


def spellings(secret: str) -> list[str]:
    """The key as written raw, JSON-escaped (plain, ASCII-only, plotly's escapes) and HTML-escaped:
    every form a JSON dump or an HTML page can carry it in, longest first."""
    forms = {secret}
    for ascii_only in (True, False):
        inner = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms |= {inner, inner.replace("<", "\\u003c").replace(">", "\\u003e").replace("/", "\\u002f")}
    forms |= {html.escape(f) for f in list(forms)} | {html.escape(f, quote=False) for f in list(forms)}
    return sorted(forms, key=len, reverse=True)


def _all_spellings(secrets: Iterable[str]) -> tuple[str, ...]:
    return _spellings_of(tuple(secrets))


@functools.lru_cache(maxsize=64)
def _spellings_of(secrets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({f for secret in secrets for f in spellings(secret)}, key=len, reverse=True))


def _redact_text(value: str, secrets: list[str], marker: str = REDACTED) -> str:
    for secret in _all_spellings(secrets):
        value = value.replace(secret, marker)
    return _API_KEY_FLAG.sub(lambda m: m.group(1) + marker, value)


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, dict):
        return {k: (REDACTED if _is_secret_field(k, v) else _redact(v, secrets)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_redact(v, secrets) for v in value)
    return value


def _is_secret_field(key: Any, value: Any) -> bool:
    return isinstance(key, str) and key.lower() in SECRET_FIELDS and isinstance(value, str) and bool(value)


# --------------------------------------------------------------------------- HTML and notebooks

_CODE = re.compile(r"(<script\b.*?</script\s*>|<style\b.*?</style\s*>)", re.DOTALL | re.IGNORECASE)
"""Script and style elements: code and JSON, where HTML entities mean nothing."""


def redact_html(text: str, extra_env_names: Iterable[str | None] = (), environ: dict[str, str] | None = None) -> str:
    """Redact every byte of an HTML document: text, tags, attributes and comments get the escaped
    marker a browser shows, scripts and styles `[redacted]` (see the module doc)."""
    secrets = secret_values(extra_env_names, environ)
    return _redact_html(text, secrets)


def _redact_html(text: str, secrets: list[str]) -> str:
    parts = _CODE.split(text)
    # re.split with one group: markup and text, code, markup and text, code, ...
    return "".join(_redact_text(p, secrets, REDACTED_CODE if i % 2 else REDACTED_HTML) for i, p in enumerate(parts))


HTML_MIME = "text/html"


def redact_notebook(nb: dict[str, Any], extra_env_names: Iterable[str | None] = ()) -> dict[str, Any]:
    """A notebook (as JSON) with secrets replaced: HTML outputs through `redact_html`, the rest
    (sources, streams, plain text, parameters) as plain text."""
    secrets = secret_values(extra_env_names)
    clean: dict[str, Any] = _redact_nb(nb, secrets)
    return clean


def _redact_nb(value: Any, secrets: list[str], key: str | None = None) -> Any:
    if key == HTML_MIME:
        if isinstance(value, str):
            return _redact_html(value, secrets)
        if isinstance(value, list):
            return _redact_html_lines(value, secrets)
    if isinstance(value, dict):
        return {k: (REDACTED if _is_secret_field(k, v) else _redact_nb(v, secrets, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_nb(v, secrets) for v in value]
    return _redact(value, secrets)


def _redact_html_lines(lines: list[Any], secrets: list[str]) -> list[str]:
    """An HTML output stored as a list of lines: redacted as one document, split back into lines."""
    joined = _redact_html("".join(str(x) for x in lines), secrets)
    return joined.splitlines(keepends=True)


_LINE_END = re.compile(r"(?<=[\r\n])")


class LineRedactor:
    """Text in, redacted text out to the file `out`, one whole line at a time (a line ends at \\n or \\r, so
    a progress bar still shows): a key split across two writes is still one line, and a writer
    killed mid-line leaves only redacted text behind (its unfinished line is lost, never written)."""

    def __init__(self, out: IO[str], extra_env_names: Iterable[str | None] = ()) -> None:
        self._out, self._names, self._pending = out, list(extra_env_names), ""

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    def write(self, text: str) -> int:
        *lines, self._pending = _LINE_END.split(self._pending + text)
        if lines:
            self._write(redact("".join(lines), self._names))
        return len(text)

    def flush(self) -> None:
        """Whole lines are out already; the unfinished one waits for its end (or close)."""

    def close(self) -> None:
        """The writer is done: its last, unfinished line goes out too (redacted)."""
        if self._pending:
            self._write(redact(self._pending, self._names))
            self._pending = ""


def pump_fd(read_fd: int, out: LineRedactor) -> None:
    """Copy what arrives on a pipe or FIFO into `out` until every writer has closed it."""
    with os.fdopen(read_fd, "rb", buffering=0) as src:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := src.read(65536):
            out.write(decoder.decode(chunk))
        out.write(decoder.decode(b"", final=True))
    out.close()
