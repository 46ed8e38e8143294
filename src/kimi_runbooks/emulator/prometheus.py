"""Prometheus text for /metrics: SGLang's metric names, types, labels and default buckets.

Mirrors the subset of SGLang 0.5.23's collectors (sglang/srt/observability/metrics_collector.py)
that a runbook scrapes. Scheduler gauges carry ``model_name, engine_type, tp_rank, pp_rank,
moe_ep_rank`` (one unified engine, rank 0); tokenizer counters and histograms carry
``model_name, engine_type`` plus ``is_streaming`` where SGLang splits by it. As in SGLang's
multiprocess registry, a labelled family shows up once it has a series. The contract suite
checks every family here against the collectors. Written by hand to keep the emulator free
of a metrics dependency.
"""

from __future__ import annotations

import bisect
import os
import time
from dataclasses import dataclass, field

from .deviations import EMULATED_METRIC
from .lag import ScheduleLag

TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 200.0, 400.0)
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
    200.0,
    400.0,
    600.0,
    1200.0,
    1800.0,
    2400.0,
)
ENGINE_TYPE = "unified"
PREFILL_EFFECTIVE_HELP = (
    "Effective prefill tokens with retracted-request re-counts excluded, updated on each log interval. "
    "mode: device_hit, host_hit, storage_hit, input. Windowed prefix cache hit rate = rate(sum of *_hit) / "
    "rate(sum of all modes); per-tier rate uses a single *_hit mode in the numerator."
)
DECODE_LOG_INTERVAL = 40
"""SGLang's --decode-log-interval default (srt/arg_groups/fields/observability.py): decode iterations
between two decode-stats ticks, where gen_throughput is recomputed."""
GEN_THROUGHPUT_STALENESS_S = 30.0
"""SGLang's GEN_THROUGHPUT_STALENESS_SECONDS (metrics_reporter.py): past it without a tick, 0."""


@dataclass
class DecodeStats:
    """``sglang:gen_throughput`` as SGLang's SchedulerMetricsReporter computes it (report_decode_stats in
    srt/managers/scheduler_components/metrics_reporter.py, 0.5.23): the tokens the whole running
    batch decoded since the last decode-stats tick, divided by the time since that tick, recomputed
    every DECODE_LOG_INTERVAL decode iterations and held in between; once no tick came for
    GEN_THROUGHPUT_STALENESS_S it reads 0 (_current_gen_throughput).

    The emulator paces each request on its own, so a decode iteration of the batch is counted as
    1/running per decoded token: with n requests running, n tokens make one iteration, as in a
    batch of n. Times are the emulator's (staleness x time_scale, like every emulated duration)."""

    staleness_s: float = GEN_THROUGHPUT_STALENESS_S
    interval: int = DECODE_LOG_INTERVAL
    tokens: int = 0
    iterations: float = 0.0
    last_tick: float = field(default_factory=time.monotonic)
    value: float = 0.0

    def decoded(self, running: int, now: float | None = None) -> None:
        """One decode token of one of `running` requests."""
        self.tokens += 1
        self.iterations += 1.0 / max(running, 1)
        if self.iterations + 1e-9 >= self.interval:
            now = time.monotonic() if now is None else now
            gap = now - self.last_tick
            self.value = self.tokens / gap if gap > 0 else self.value
            self.last_tick, self.tokens, self.iterations = now, 0, 0.0

    def current(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        if now - self.last_tick > self.staleness_s:
            self.value = 0.0
        return self.value


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
            out.append(f'{name}_bucket{{{labels},le="{bound}"}} {float(running)}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(self.count)}')
        out.append(f"{name}_count{{{labels}}} {float(self.count)}")
        out.append(f"{name}_sum{{{labels}}} {self.total}")
        return out


def _flag(streaming: bool) -> str:
    return "true" if streaming else "false"


@dataclass
class Metrics:
    """Counters and histograms the engine updates as requests run."""

    model_name: str
    marked: bool = True  # print the sglang:is_emulated marker (deviations.py)
    spec_accept_length: float = 0.0  # the latency profile's; 0 without speculative decoding, as SGLang
    prompt_tokens_total: dict[str, int] = field(default_factory=dict)
    generation_tokens_total: dict[str, int] = field(default_factory=dict)
    requests_total: dict[str, int] = field(default_factory=dict)
    aborted_requests_total: int = 0
    decode: DecodeStats = field(default_factory=DecodeStats)
    ttft: dict[str, Histogram] = field(default_factory=dict)
    e2e: dict[str, Histogram] = field(default_factory=dict)
    itl: Histogram = field(default_factory=lambda: Histogram(ITL_BUCKETS))
    cache_hit_rate: float = 0.0
    prefill_effective: dict[str, int] = field(default_factory=dict)  # mode (input, device_hit) -> tokens
    cached_tokens_total: int = 0
    lag: ScheduleLag = field(default_factory=ScheduleLag)
    """How late the engine's steps woke against its latency model (lag.py); printed when marked."""

    # ---- updates (the engine calls these)
    def count_prompt(self, tokens: int, streaming: bool) -> None:
        key = _flag(streaming)
        self.prompt_tokens_total[key] = self.prompt_tokens_total.get(key, 0) + tokens

    def observe_prefill(self, new_tokens: int, cached_tokens: int) -> None:
        """One prefill (each emulated request is its own prefill batch): SGLang's report_prefill_stats
        sets sglang:cache_hit_rate to the batch's hit tokens / (hit + new) and counts both in
        sglang:prefill_effective_tokens_total (metrics_reporter.py, 0.5.23)."""
        total = new_tokens + cached_tokens
        self.cache_hit_rate = cached_tokens / total if total > 0 else 0.0
        for mode, delta in (("input", new_tokens), ("device_hit", cached_tokens)):
            if delta > 0:
                self.prefill_effective[mode] = self.prefill_effective.get(mode, 0) + delta

    @property
    def last_gen_throughput(self) -> float:
        """What SGLang's /server_info reports as last_gen_throughput (the reporter's value)."""
        return self.decode.value

    def count_token(self, streaming: bool, running: int | None = None) -> None:
        """One generated token; `running` (requests running now) when it came from a decode step,
        None for the first token of a request, which its prefill produced."""
        key = _flag(streaming)
        self.generation_tokens_total[key] = self.generation_tokens_total.get(key, 0) + 1
        if running is not None:
            self.decode.decoded(running)

    def observe_ttft(self, seconds: float, streaming: bool) -> None:
        self.ttft.setdefault(_flag(streaming), Histogram(TTFT_BUCKETS)).observe(seconds)

    def finish(self, e2e_seconds: float, streaming: bool, cached_tokens: int = 0) -> None:
        """A finished request; its cached prompt tokens go to sglang:cached_tokens_total with
        cache_source="device" (observe_one_finished_request: the scheduler always sends the
        device/host breakdown when a request had cached tokens)."""
        key = _flag(streaming)
        self.cached_tokens_total += max(cached_tokens, 0)
        self.requests_total[key] = self.requests_total.get(key, 0) + 1
        self.e2e.setdefault(key, Histogram(E2E_BUCKETS)).observe(e2e_seconds)

    def gen_throughput(self, running: int) -> float:
        """The exported gauge: the last tick's value while requests run; 0 once the batch is empty
        (SGLang's idle report, _maybe_log_idle_metrics, publishes gen_throughput 0)."""
        return self.decode.current() if running > 0 else 0.0

    # ---- exposition
    def render(self, running: int, queued: int, token_usage: float, used_tokens: int, capacity: int = 0) -> str:
        """The /metrics body (Prometheus text exposition format 0.0.4). ``capacity``: the KV pool's tokens."""
        name = _escape(self.model_name)
        scheduler = f'engine_type="{ENGINE_TYPE}",model_name="{name}",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
        tokenizer = f'engine_type="{ENGINE_TYPE}",model_name="{name}"'
        lines: list[str] = []
        gauges = [
            ("sglang:num_running_reqs", "The number of running requests.", running),
            ("sglang:num_used_tokens", "The number of used tokens.", used_tokens),
            ("sglang:token_usage", "The token usage.", round(token_usage, 6)),
            ("sglang:gen_throughput", "The generation throughput (token/s).", round(self.gen_throughput(running), 3)),
            ("sglang:num_queue_reqs", "The number of requests in the waiting queue.", queued),
            ("sglang:cache_hit_rate", "The prefix cache hit rate.", round(self.cache_hit_rate, 6)),
            ("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.", capacity),
            ("sglang:spec_accept_length", SPEC_ACCEPT_HELP, self.spec_accept_length),
        ]
        for metric, help_text, value in gauges:
            lines += [
                f"# HELP {metric} {help_text}",
                f"# TYPE {metric} gauge",
                f"{metric}{{{scheduler}}} {float(value)}",
            ]
        # a gauge left in multiprocess mode "all" (metrics_collector.py): one series per process, pid label
        per_process = f'engine_type="{ENGINE_TYPE}",model_name="{name}",moe_ep_rank="0",pid="{os.getpid()}",pp_rank="0"'
        lines += [
            "# HELP sglang:num_retracted_reqs The number of retracted requests.",
            "# TYPE sglang:num_retracted_reqs gauge",
            f'sglang:num_retracted_reqs{{{per_process},tp_rank="0"}} 0.0',
        ]
        if self.marked:
            lines += [
                f"# HELP {EMULATED_METRIC} 1: this server is the kimi-runbooks emulator.",
                f"# TYPE {EMULATED_METRIC} gauge",
                f"{EMULATED_METRIC} 1.0",
            ]
            lines += self.lag.lines(tokenizer)
        split = [
            ("sglang:prompt_tokens", "Number of prefill tokens processed.", self.prompt_tokens_total),
            ("sglang:generation_tokens", "Number of generation tokens processed.", self.generation_tokens_total),
            ("sglang:num_requests", "The number of requests.", self.requests_total),
        ]
        for metric, help_text, series in split:
            if series:
                lines += [f"# HELP {metric}_total {help_text}", f"# TYPE {metric}_total counter"]
                lines += [
                    f'{metric}_total{{{tokenizer},is_streaming="{flag}"}} {float(value)}'
                    for flag, value in sorted(series.items())
                ]
        if self.prefill_effective:
            metric = "sglang:prefill_effective_tokens_total"
            lines += [f"# HELP {metric} {PREFILL_EFFECTIVE_HELP}", f"# TYPE {metric} counter"]
            lines += [
                f'{metric}{{{scheduler},mode="{mode}"}} {float(value)}'
                for mode, value in sorted(self.prefill_effective.items())
            ]
        if self.cached_tokens_total:
            metric = "sglang:cached_tokens_total"
            lines += [
                f"# HELP {metric} Number of cached prompt tokens by source (device/host/storage).",
                f"# TYPE {metric} counter",
                f'{metric}{{cache_source="device",{tokenizer}}} {float(self.cached_tokens_total)}',
            ]
        if self.aborted_requests_total:
            lines += [
                "# HELP sglang:num_aborted_requests_total Number of requests aborted.",
                "# TYPE sglang:num_aborted_requests_total counter",
                (f"sglang:num_aborted_requests_total{{{tokenizer}}} {float(self.aborted_requests_total)}"),
            ]
        for metric, help_text, hists in (
            ("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", self.ttft),
            ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", self.e2e),
        ):
            if hists:
                lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} histogram"]
                for flag, hist in sorted(hists.items()):
                    lines += hist.lines(metric, f'{tokenizer},is_streaming="{flag}"')
        if self.itl.count:
            metric = "sglang:inter_token_latency_seconds"
            lines += [f"# HELP {metric} Histogram of inter-token latency in seconds.", f"# TYPE {metric} histogram"]
            lines += self.itl.lines(metric, tokenizer)
        return "\n".join(lines) + "\n"


SPEC_ACCEPT_HELP = "Mean acceptance length of speculative decoding (accepted drafts + bonus token per forward)."


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
