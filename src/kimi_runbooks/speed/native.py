"""Does the server have SGLang's native API? Asked once, before the native-API scenarios.

bench_serving's `--backend sglang` sends SGLang's native POST /generate (and its warm-up request
first). A third-party server that speaks only the OpenAI API (llama.cpp's, vLLM's) answers 404 Not
Found there, so every such scenario died in the warm-up with `Not Found`, one by one. One probe
says it once; those scenarios are skipped with the reason, and the chat-API ones still run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

NATIVE_BACKENDS = ("sglang",)
"""bench_serving backends that use SGLang's native /generate (sglang-oai, sglang-oai-chat use /v1)."""
PROBE_TIMEOUT_S = 10.0


def missing_native_api(
    base_url: str, scenarios: Sequence[Any], api_key: str | None = None, *, emulated: bool = False
) -> str | None:
    """The reason to skip the native-API scenarios, or None (the server has /generate, none of the
    scenarios needs it, or the probe could not tell: then the scenario runs and says for itself)."""
    if emulated or not any(getattr(s, "backend", None) in NATIVE_BACKENDS for s in scenarios):
        return None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"text": "hi", "sampling_params": {"max_new_tokens": 1, "temperature": 0}}
    try:
        resp = httpx.post(base_url.rstrip("/") + "/generate", json=body, headers=headers, timeout=PROBE_TIMEOUT_S)
    except httpx.HTTPError:
        return None
    if resp.status_code not in (404, 405):
        return None
    return (
        f"this server has no SGLang native API (POST /generate answered {resp.status_code}): scenarios with "
        "backend 'sglang' need it. Fix: run the chat-API scenarios (backend sglang-oai-chat, e.g. the "
        "openai-smoke set), or serve with SGLang"
    )
