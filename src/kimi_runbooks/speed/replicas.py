"""Behind sglang-router: what each server behind it served, read from its own /metrics.

bench_serving reads a request's cached tokens from the `sglext` block of SGLang's OpenAI answer
(benchmark/serving.py `_extract_cache_from_sglext`, 0.5.23); sglang-router 0.3.2 passes the answer on
without it, so behind a router bench_serving counts 0 cached tokens and reports a 0% hit rate while
the replicas hit 90%. Each server's own counters do not go through the router: SGLang's
``sglang:num_requests_total``, ``sglang:prompt_tokens_total`` and ``sglang:cached_tokens_total``
(srt/observability/metrics_collector.py, TokenizerMetricsCollector; the emulator prints the same),
read just before and just after a scenario, give each server's requests, prompt tokens and cached
tokens in between (bench_serving's warm-up requests included), hence the hit rate as the servers saw
it and how the router spread the load.

A starved server: among servers of one role (replicas, or a PD deployment's decode servers), one
that served fewer than STARVED_SHARE of its fair share (total / servers). A router policy whose hit
rate comes from sending every request to one replica (cache_aware with a system prompt every
conversation shares: 48 of 48) leaves the others idle, so the capacity measured is one replica's.
Judged only when the role's servers were sent at least MIN_REQUESTS_PER_SERVER each on average.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

COUNTERS = {
    "sglang:num_requests_total": "requests",
    "sglang:prompt_tokens_total": "prompt_tokens",
    "sglang:cached_tokens_total": "cached_tokens",
}
STARVED_SHARE = 0.5
"""A server below half its fair share of the requests is starved."""
MIN_REQUESTS_PER_SERVER = 2
"""Fewer requests per server than this on average says nothing about balance."""
HIT_RATE_SOURCE = "the servers' own /metrics behind the router (bench_serving's reading drops through the router)"


@dataclass(frozen=True)
class Backend:
    """One server behind the router, as the deploy stage recorded it (handle.json `backends`)."""

    name: str
    url: str
    role: str = "replica"

    @classmethod
    def of(cls, value: Any) -> Backend:
        if isinstance(value, Backend):
            return value
        return cls(str(value["name"]), str(value["url"]), str(value.get("role") or "replica"))


def parse_counters(text: str) -> dict[str, float] | None:
    """requests, prompt_tokens and cached_tokens from a Prometheus page, each summed over its series.
    SGLang's counters are labelled, and prometheus_client prints a label set only once it has been
    counted, so a counter an SGLang page leaves out is 0 (no request yet, no cache hit yet). None for
    a page with no SGLang metric at all (a server without --enable-metrics, or not SGLang)."""
    out = dict.fromkeys(COUNTERS.values(), 0.0)
    sglang = False
    for family in text_string_to_metric_families(text):
        sglang = sglang or family.name.startswith("sglang:")
        for sample in family.samples:
            key = COUNTERS.get(sample.name)
            if key is not None:
                out[key] += float(sample.value)
    return out if sglang else None


def read_counters(
    backends: list[Backend], client: httpx.Client | None = None, timeout: float = 10.0
) -> dict[str, dict[str, float] | str]:
    """name -> its counters, or why they could not be read (the error names the URL)."""
    out: dict[str, dict[str, float] | str] = {}
    own = client is None
    client = client or httpx.Client(timeout=timeout)
    try:
        for b in backends:
            try:
                answer = client.get(b.url.rstrip("/") + "/metrics")
                if answer.status_code != 200:
                    out[b.name] = f"GET {b.url}/metrics answered {answer.status_code}"
                    continue
                counters = parse_counters(answer.text)
                out[b.name] = counters if counters is not None else f"{b.url}/metrics has no SGLang metrics"
            except (httpx.HTTPError, ValueError) as exc:
                out[b.name] = f"GET {b.url}/metrics failed: {type(exc).__name__}"
    finally:
        if own:
            client.close()
    return out


def split(
    backends: list[Backend],
    before: dict[str, dict[str, float] | str],
    after: dict[str, dict[str, float] | str],
    policy: str | None = None,
) -> dict[str, Any]:
    """Per server: requests, prompt and cached tokens between the two readings and its hit rate; the
    fleet's hit rate (sum cached / sum prompt over the servers); the starved servers and why."""
    servers: list[dict[str, Any]] = []
    unread: list[str] = []
    for b in backends:
        old, new = before.get(b.name), after.get(b.name)
        if not isinstance(old, dict) or not isinstance(new, dict):
            unread.append(next((x for x in (new, old) if isinstance(x, str)), f"{b.name}: not read"))
            continue
        delta = {k: int(new.get(k, 0.0) - old.get(k, 0.0)) for k in COUNTERS.values()}
        prompt, cached = delta["prompt_tokens"], delta["cached_tokens"]
        servers.append(
            {
                "name": b.name,
                "url": b.url,
                "role": b.role,
                **delta,
                "cache_hit_rate": round(cached / prompt, 4) if prompt else None,
            }
        )
    prompt = sum(s["prompt_tokens"] for s in servers)
    cached = sum(s["cached_tokens"] for s in servers)
    hit = round(cached / prompt, 4) if prompt else None
    starved = starved_servers(servers)
    out: dict[str, Any] = {
        "policy": policy,
        "servers": servers,
        "cache_hit_rate": hit,
        "cache_hit_rate_source": HIT_RATE_SOURCE if hit is not None else None,
        "requests": "/".join(str(s["requests"]) for s in servers),
        "starved": starved,
    }
    if unread:
        out["unread"] = unread
    return out


def starved_servers(servers: list[dict[str, Any]]) -> list[str]:
    """Why each starved server is one (see module docstring), one sentence each."""
    roles: dict[str, list[dict[str, Any]]] = {}
    for s in servers:
        if s.get("requests") is not None and s.get("role") in ("replica", "decode", "prefill"):
            roles.setdefault(str(s["role"]), []).append(s)
    found = []
    for members in roles.values():
        total = sum(int(s["requests"]) for s in members)
        if len(members) < 2 or total < MIN_REQUESTS_PER_SERVER * len(members):
            continue
        fair = total / len(members)
        for s in members:
            if s["requests"] < STARVED_SHARE * fair:
                found.append(
                    f"{s['name']} served {s['requests']} of {total} requests (a fair share is {fair:.0f}): the "
                    "router left it nearly idle, so the throughput measured is the other servers'"
                )
    return found


def behind_router(row: dict[str, Any]) -> dict[str, Any]:
    """A result row read behind a router: its hit rate is the servers' own (`replicas`), and the
    per-turn hit rates bench_serving computed from the answers it got through the router (every
    request 0 cached tokens) are unknown rather than 0%. A row without `replicas` is unchanged."""
    fleet = row.get("replicas")
    if not isinstance(fleet, dict):
        return row
    out = dict(row)
    out["cache_hit_rate"] = fleet.get("cache_hit_rate")
    out["cache_hit_rate_source"] = fleet.get("cache_hit_rate_source")
    out["requests_per_server"] = fleet.get("requests")
    out["starved_servers"] = "; ".join(fleet.get("starved") or []) or None
    if isinstance(out.get("turns"), list):
        out["turns"] = [{**t, "cache_hit_rate": None} if isinstance(t, dict) else t for t in out["turns"]]
    return out
