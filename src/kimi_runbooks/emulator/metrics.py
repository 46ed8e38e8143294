"""Prometheus text for /metrics with SGLang's metric names (sglang:*).

Runbooks scrape these to watch queueing and token usage; the names and label
(``model_name``) follow SGLang's so the same scrape code works on a real server.
Written by hand to keep the emulator free of a metrics dependency.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 120.0, 160.0)
ITL_BUCKETS = (
    0.002,
    0.004,
    0.006,
    0.008,
    0.010,
    0.015,
    0.020,
    0.025,
    0.030,
    0.035,
    0.040,
    0.060,
    0.080,
    0.100,
    0.200,
    0.400,
    0.600,
    0.800,
    1.0,
    2.0,
    4.0,
    6.0,
    8.0,
)
E2E_BUCKETS = (
    0.1,
    0.2,
    0.4,
    0.6,
    0.8,
    1.0,
    2.0,
    4.0,
    6.0,
    8.0,
    10.0,
    20.0,
    40.0,
    60.0,
    80.0,
    100.0,
    150.0,
    200.0,
    250.0,
    300.0,
    350.0,
    500.0,
    1000.0,
)


@dataclass
class Histogram:
    """Cumulative-bucket histogram in seconds."""

    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.buckets, value)
        if index < len(self.counts):
            self.counts[index] += 1
        self.total += value
        self.count += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        for bound, n in zip(self.buckets, self.counts):
            running += n
            out.append(f'{name}_bucket{{{labels},le="{bound}"}} {running}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.count}')
        out.append(f"{name}_sum{{{labels}}} {self.total}")
        out.append(f"{name}_count{{{labels}}} {self.count}")
        return out


@dataclass
class Metrics:
    """Counters and histograms the engine updates as requests run."""

    model_name: str
    prompt_tokens_total: int = 0
    generation_tokens_total: int = 0
    requests_total: int = 0
    aborted_requests_total: int = 0
    last_gen_throughput: float = 0.0
    ttft: Histogram = field(default_factory=lambda: Histogram(TTFT_BUCKETS))
    itl: Histogram = field(default_factory=lambda: Histogram(ITL_BUCKETS))
    e2e: Histogram = field(default_factory=lambda: Histogram(E2E_BUCKETS))

    def render(self, running: int, queued: int, token_usage: float, used_tokens: int) -> str:
        """The /metrics body (Prometheus text exposition format 0.0.4)."""
        labels = f'model_name="{_escape(self.model_name)}"'
        lines = ["# Emulated SGLang metrics (kimi-runbooks emulator): no model is running."]
        gauges = [
            ("sglang:num_running_reqs", "The number of running requests.", running),
            ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", queued),
            ("sglang:num_used_tokens", "The number of used tokens.", used_tokens),
            ("sglang:token_usage", "The token usage.", round(token_usage, 6)),
            ("sglang:gen_throughput", "The generation throughput (token/s).", round(self.last_gen_throughput, 3)),
            ("sglang:cache_hit_rate", "The prefix cache hit rate.", 0.0),
            ("sglang:is_emulated", "1: this server is the kimi-runbooks emulator.", 1),
        ]
        for name, help_text, value in gauges:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name}{{{labels}}} {float(value)}"]
        counters = [
            ("sglang:prompt_tokens_total", "Number of prefill tokens processed.", self.prompt_tokens_total),
            ("sglang:generation_tokens_total", "Number of generation tokens processed.", self.generation_tokens_total),
            ("sglang:num_requests_total", "Number of requests processed.", self.requests_total),
            ("sglang:num_aborted_requests_total", "Number of requests aborted.", self.aborted_requests_total),
        ]
        for name, help_text, value in counters:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} counter", f"{name}{{{labels}}} {float(value)}"]
        histograms = [
            ("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", self.ttft),
            ("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", self.itl),
            ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", self.e2e),
        ]
        for name, help_text, hist in histograms:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} histogram"]
            lines += hist.lines(name, labels)
        return "\n".join(lines) + "\n"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
