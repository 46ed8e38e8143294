"""Send the case table to running emulators and write the raw exchanges to a JSON file.

Runs in the project's own venv. Responses are kept raw (status, headers, body text, SSE
``data:`` payloads in order) so the bench-env checker judges exactly what went over the wire.
It also records, per case, the prompt token count the emulator charged: tokenization is the
one step SGLang's code cannot redo here (no Kimi tokenizer), so the replay borrows it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from cases import API_KEY, CASES, CONTEXT_LENGTH, MODEL, Case

from kimi_runbooks.emulator import DEVIATIONS, EmulatorSettings
from kimi_runbooks.emulator.chat_input import read_chat
from kimi_runbooks.emulator.error_answers import ApiError
from kimi_runbooks.emulator.events import EOS_TOKEN_ID
from kimi_runbooks.emulator.protocol import ChatRequest, parse_body
from kimi_runbooks.kimi.tokenizer import count_tokens

FAST = 0.01


def settings_for(variant: str, strict: bool) -> EmulatorSettings:
    return EmulatorSettings(
        time_scale=FAST,
        log_startup=False,
        seed=3,
        model=MODEL,
        api_key=API_KEY if variant == "auth" else None,
        max_model_len=CONTEXT_LENGTH,
        strict_sglang=strict,
    )


def declared_deviations() -> list[dict[str, Any]]:
    """The emulator's own list of allowed deviations (deviations.py)."""
    return [d.as_dict() for d in DEVIATIONS]


def prompt_tokens(case: Case) -> int | None:
    """The prompt length the emulator charges for this case (None when not a generation)."""
    body = case.body
    if not isinstance(body, dict):
        return None
    try:
        if case.path == "/v1/chat/completions" and "messages" in body:
            return read_chat(parse_body(ChatRequest, {"model": MODEL, **body})).prompt_tokens
        if case.path == "/v1/completions" and isinstance(body.get("prompt"), str):
            return count_tokens(body["prompt"])
        if case.path == "/generate":
            if isinstance(body.get("text"), str):
                return count_tokens(body["text"])
            if isinstance(body.get("input_ids"), list):
                return len(body["input_ids"])
    except (ApiError, ValueError, TypeError, KeyError, IndexError):  # a body it rejects: no count
        return None
    return None


def _sse(text: str) -> list[dict[str, Any]]:
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        event: dict[str, Any] = {"event": None, "data": None}
        for line in block.split("\n"):
            if line.startswith("data: "):
                event["data"] = line[len("data: ") :]
            elif line.startswith("event: "):
                event["event"] = line[len("event: ") :]
        events.append(event)
    return events


def exchange(client: httpx.Client, case: Case) -> dict[str, Any]:
    content = case.content()
    response = client.request(case.method, case.path, content=content, headers=case.request_headers())
    ctype = response.headers.get("content-type", "")
    record: dict[str, Any] = {
        "id": case.id,
        "surface": case.surface,
        "variant": case.variant,
        "request": {
            "method": case.method,
            "path": case.path,
            "headers": case.request_headers(),
            "body": content.decode() if content is not None else None,
        },
        "prompt_tokens": prompt_tokens(case),
        "response": {
            "status": response.status_code,
            "headers": {k.lower(): v for k, v in response.headers.items()},
            "body": response.text,
            "sse": _sse(response.text) if ctype.startswith("text/event-stream") else None,
        },
    }
    return record


def capture(base_urls: dict[str, str], out: Path, *, strict: bool) -> dict[str, Any]:
    """Run every case against the emulator of its variant and write ``out``."""
    records = []
    clients = {name: httpx.Client(base_url=url, timeout=60.0) for name, url in base_urls.items()}
    try:
        for case in CASES:
            records.append(exchange(clients[case.variant], case))
    finally:
        for client in clients.values():
            client.close()
    data = {
        "strict": strict,
        "emulator": {
            "model": MODEL,
            "context_length": CONTEXT_LENGTH,
            "api_key": API_KEY,
            "eos_token_id": EOS_TOKEN_ID,
            "deviations": [] if strict else declared_deviations(),
        },
        "exchanges": records,
    }
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    return data


@contextmanager
def emulators(strict: bool) -> Iterator[dict[str, str]]:
    """A fresh emulator per variant (default, auth) while the block runs: {variant: url}."""
    from kimi_runbooks.emulator.testing import run_in_thread

    urls, stops = {}, []
    try:
        for variant in ("default", "auth"):
            url, stop = run_in_thread(settings_for(variant, strict))
            urls[variant] = url
            stops.append(stop)
        yield urls
    finally:
        for stop in stops:
            stop()


def main(argv: list[str]) -> int:
    """``python tests/contract/capture.py OUT.json [--strict]``: start emulators, capture, stop."""
    strict = "--strict" in argv
    with emulators(strict) as urls:
        capture(urls, Path(argv[1]), strict=strict)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv))
