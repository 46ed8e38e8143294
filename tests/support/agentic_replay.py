"""The `agentic` scenario set's coding trace replayed through a router, shared by the router policy tests
(tests/deploy/test_router_policies.py over emulators, test_router_real_workers.py over real SGLang).

The trace is params/scenarios/agentic.yaml's (speed/traces.py), replayed as bench_serving's
agentic-trace replays it: each conversation's rounds in order, the server's reply appended as the
assistant message before the next round. The hit rate is sum(cached_tokens) / sum(prompt_tokens)
from usage.prompt_tokens_details (the server needs --enable-cache-report); a server's own count is
its /metrics (SGLang's sglang:num_requests_total, sglang:prompt_tokens_total, sglang:cached_tokens_total).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from kimi_runbooks.catalog import TraceDesign, load_catalog


def agentic_design(**changes: Any) -> TraceDesign:
    """The agentic set's trace design (with `changes`: fewer conversations or turns)."""
    scenarios = load_catalog().scenario_sets["agentic"].scenarios
    design = next(s for s in scenarios if s.dataset == "agentic-trace").trace
    assert design is not None
    return design.model_copy(update=changes)


def replay(url: str, model: str, conversation: list[dict[str, Any]], output_len: int) -> tuple[int, int]:
    """One conversation, round by round: (sum of prompt_tokens, sum of cached_tokens) from usage."""
    messages: list[dict[str, Any]] = []
    prompt = cached = 0
    with httpx.Client(timeout=300) as client:
        for turn in conversation:
            messages += turn["messages"]
            body = {"model": model, "messages": messages, "max_tokens": output_len, "ignore_eos": True}
            answer = client.post(f"{url}/v1/chat/completions", json=body)
            answer.raise_for_status()
            data = answer.json()
            usage = data["usage"]
            prompt += usage["prompt_tokens"]
            cached += (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
            reply = data["choices"][0]["message"]
            messages.append({"role": "assistant", "content": reply.get("content") or ""})
    return prompt, cached


def metric_sum(text: str, name: str) -> float:
    """The sum of every series of metric `name` (all label sets) in a Prometheus text page."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and line[len(name) : len(name) + 1] in ("{", " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def requests_served(url: str) -> float:
    return metric_sum(httpx.get(f"{url}/metrics").text, "sglang:num_requests_total")


@dataclass(frozen=True)
class ServerCounts:
    """One server's own counters (its /metrics) at one moment; subtract two for what happened between."""

    requests: float
    prompt_tokens: float
    cached_tokens: float

    @classmethod
    def read(cls, url: str) -> ServerCounts:
        text = httpx.get(f"{url}/metrics", timeout=30).text
        return cls(
            metric_sum(text, "sglang:num_requests_total"),
            metric_sum(text, "sglang:prompt_tokens_total"),
            metric_sum(text, "sglang:cached_tokens_total"),
        )

    def __sub__(self, other: ServerCounts) -> ServerCounts:
        return ServerCounts(
            self.requests - other.requests,
            self.prompt_tokens - other.prompt_tokens,
            self.cached_tokens - other.cached_tokens,
        )
