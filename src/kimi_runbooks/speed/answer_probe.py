"""Time to first answer token: a few streamed chat requests beside every scenario.

bench_serving's TTFT is the time to the first streamed token of any kind; a thinking model's first
tokens are its reasoning (``delta.reasoning_content`` when the server runs a reasoning parser), so
what a user waits for before the answer starts is longer. The probe sends `requests` chat
completions with ``stream=True`` one after another and times, from the moment each is sent, the
first reasoning token and the first answer (``delta.content``) token. Times are wall clock as
received here (on the emulator: at its time scale; speed.timescale.rescale puts them on time
scale 1 with the row's other ``*_ms`` columns). The stream is closed at the first answer token.
A stream whose reasoning used up max_tokens has no
answer time and is counted, not averaged in. The probe follows every ok scenario whatever its
backend: bench_serving's native `/generate` requests do not tell reasoning from answer, and every
SGLang server also serves chat completions, so a native-backend scenario of a thinking model still
gets its time to first answer token (at concurrency 1 after the scenario, not under its load).
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import httpx

from ..catalog import Scenario
from ..target.tls import verified_tls

PROMPT = "A user reports that the build fails after a dependency update. Say what you would check first."
DEFAULT_MAX_TOKENS = 256


def _max_tokens(scenario: Scenario) -> int:
    """The scenario's output length, at least DEFAULT_MAX_TOKENS: a short agentic turn's 24 tokens
    are all reasoning on a thinking model, and the probe is there to see the answer start."""
    output = scenario.output_len or (scenario.trace.output_len if scenario.trace else None)
    return max(int(output or 0), DEFAULT_MAX_TOKENS)  # room for the reasoning before the answer


def _one(client: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, float | None]:
    sent = time.perf_counter()
    first_reasoning = first_answer = None
    with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data:") or line.strip() == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                at = (time.perf_counter() - sent) * 1000.0
                if delta.get("reasoning_content") and first_reasoning is None:
                    first_reasoning = at
                if delta.get("content") and first_answer is None:
                    first_answer = at
            if first_answer is not None:
                break  # the answer has started: the rest of the stream is not timed
    return {"reasoning_ms": first_reasoning, "answer_ms": first_answer}


def probe(
    base_url: str,
    model: str | None,
    api_key: str | None = None,
    requests: int = 3,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = 60.0,
) -> dict[str, Any]:
    """Median time to the first reasoning and the first answer token over `requests` streams."""
    url = base_url.rstrip("/") + "/v1/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {
        "model": model or "default",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "stream": True,
    }
    times, errors = [], []
    with httpx.Client(timeout=timeout, headers=headers, verify=verified_tls()) as client:
        for _ in range(requests):
            try:
                times.append(_one(client, url, body))
            except (httpx.HTTPError, json.JSONDecodeError) as exc:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
    reasoning = [t["reasoning_ms"] for t in times if t["reasoning_ms"] is not None]
    answer = [t["answer_ms"] for t in times if t["answer_ms"] is not None]
    return {
        "requests": requests,
        "max_tokens": max_tokens,
        "median_first_reasoning_ms": round(statistics.median(reasoning), 3) if reasoning else None,
        "median_first_answer_ms": round(statistics.median(answer), 3) if answer else None,
        "thinking": bool(reasoning),
        "no_answer": len(times) - len(answer),
        "errors": errors,
    }


def answer_results(
    scenario: Scenario, base_url: str | None, model: str | None, api_key: str | None, n: int
) -> dict[str, Any]:
    """What a scenario's row gains (`first_answer` and its median as a `*_ms` column); {} when the
    probe is off (n=0) or there is no URL."""
    if n <= 0 or not base_url:
        return {}
    found = probe(base_url, model, api_key, requests=n, max_tokens=_max_tokens(scenario))
    out: dict[str, Any] = {"first_answer": found}
    if found["median_first_answer_ms"] is not None:
        out["median_first_answer_ms"] = found["median_first_answer_ms"]
        out["first_answer_from"] = f"probe: {n} single requests after the scenario, not under its load"
    if found["median_first_reasoning_ms"] is not None:
        out["median_first_reasoning_ms"] = found["median_first_reasoning_ms"]
    return out
