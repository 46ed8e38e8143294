"""What the server itself says it serves: the context it accepts and whether it takes images.

Requests are sized from these, not from the plan: a server started with a smaller context (a CPU
rehearsal, a `--context-length` set to save memory) answers HTTP 400 to a prompt plus max_tokens
over it, and a text-only model answers 400 "Model only supports text input" to an image. SGLang
says both: `max_model_len` per model in GET /v1/models (serving_models.py) and
`has_image_understanding` in GET /model_info (http_server.py). A server that says neither (another
OpenAI-compatible server) leaves both None: the plan's values then stand. SGLang also refuses an input
the KV pool cannot hold whole: GET /server_info gives `max_total_num_tokens` and the longest input it
admits, `max_req_input_len` (min(context, pool) - 6, managers/tp_worker.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from .tls import verified_tls

REHEARSAL_COMPLETION_TOKENS = 256
"""Completion tokens per request against a rehearsal's tiny random-weight model (launcher sglang-cpu): it
rarely writes its end-of-turn token, so each request runs to max_tokens, at ~30-50 tokens/s on two CPU
cores. 256 tokens show the server's behaviour (parsers, streaming, finish reasons) in seconds."""


@dataclass(frozen=True)
class ServedLimits:
    max_model_len: int | None = None
    """Prompt + completion tokens the server accepts for one request (its context length)."""
    images: bool | None = None
    """Whether the served model takes image input; None: the server did not say."""
    sources: list[str] = field(default_factory=list)
    max_total_num_tokens: int | None = None
    """The server's KV pool in tokens (GET /server_info); None: it did not say."""
    max_req_input_len: int | None = None
    """The longest input the server admits (GET /server_info); None: it did not say."""

    def completion_budget(self, wanted: int, rehearsal: bool = False) -> int:
        """`wanted` completion tokens, capped at half the server's context so a prompt of up to the
        other half still fits (SGLang refuses prompt + max_tokens above its context), and at
        REHEARSAL_COMPLETION_TOKENS against a rehearsal's tiny model."""
        if rehearsal:
            wanted = min(wanted, REHEARSAL_COMPLETION_TOKENS)
        if not self.max_model_len:
            return wanted
        return max(1, min(wanted, self.max_model_len // 2))


def _get(client: httpx.Client, url: str) -> Any:
    try:
        resp = client.get(url)
    except httpx.HTTPError:
        return None
    if resp.status_code != 200:
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def read_served_limits(base_url: str, model: str, api_key: str | None = None, timeout: float = 10.0) -> ServedLimits:
    """The limits GET /v1/models and GET /model_info give for `model`; None where they say nothing."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
    base = base_url.rstrip("/")
    max_len: int | None = None
    images: bool | None = None
    sources: list[str] = []
    with httpx.Client(timeout=timeout, headers=headers, verify=verified_tls()) as client:
        listing = _get(client, base + "/v1/models")
        rows = listing.get("data") if isinstance(listing, dict) else None
        for row in rows if isinstance(rows, list) else []:
            value = row.get("max_model_len") if isinstance(row, dict) else None
            if isinstance(row, dict) and row.get("id") == model and isinstance(value, int) and value > 0:
                max_len = value
                sources.append(f"max_model_len {value} from GET /v1/models")
        info = _get(client, base + "/model_info")
        flag = info.get("has_image_understanding") if isinstance(info, dict) else None
        if isinstance(flag, bool):
            images = flag
            sources.append(f"has_image_understanding {str(flag).lower()} from GET /model_info")
        server = _get(client, base + "/server_info")
        pool, longest = (_positive(server, key) for key in ("max_total_num_tokens", "max_req_input_len"))
        if pool:
            sources.append(f"max_total_num_tokens {pool} from GET /server_info")
        if longest:
            sources.append(f"max_req_input_len {longest} from GET /server_info")
    return ServedLimits(max_len, images, sources, max_total_num_tokens=pool, max_req_input_len=longest)


def _positive(doc: Any, key: str) -> int | None:
    value = doc.get(key) if isinstance(doc, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
