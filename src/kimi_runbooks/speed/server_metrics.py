"""Sample the server's own /metrics beside a benchmark: was it queueing, was the KV pool full?

SGLang exports Prometheus metrics at /metrics when started with --enable-metrics (its metrics
collector: sglang/srt/observability/metrics_collector.py in 0.5.23). The scheduler's gauges are
rewritten at prefill batches and every 40th decode iteration, so a 1 s scrape sees repeated values
while decode runs fast; that is enough to tell queueing, pool pressure and idle devices apart.
Series carry labels (model_name, engine_type, tp_rank, ..., one series per dp_rank with DP
attention); counts are summed across them, fractions take their maximum.

Behind sglang-router (which answers /metrics on its main port with 404) the sampler scrapes each
server behind it instead and reads them as one server: counts summed, fractions their maximum
(`merge`), so a fleet's running requests are all of its servers'.

The sampler runs in a thread during one scenario, appends every sample to the run folder
(metrics/<scenario>.jsonl) as it goes, and summarises the scenario when it stops. When it scrapes
(fast as the measured requests start, after bench_serving's warm-up) is scrape_schedule.py's.
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ..procs import BackgroundLoop
from ..rundir import RunFolder
from ..target.tls import verified_tls
from .emulator_lag import lag_change, parse_lag
from .scrape_schedule import BENCH_SERVING_WARMUP_REQUESTS, FIRST_INTERVAL_S, SAMPLE_INTERVAL_S, ScrapeSchedule

GAUGES_SUMMED = (
    "num_running_reqs",
    "num_queue_reqs",
    "num_used_tokens",
    "max_total_num_tokens",
    "gen_throughput",
    "num_retracted_reqs",
)
GAUGES_MAX = ("token_usage", "cache_hit_rate", "spec_accept_length")
HISTOGRAMS = ("time_to_first_token_seconds", "inter_token_latency_seconds")
PREFIX = "sglang:"
METRICS_OFF = (
    "metrics off: the server has no Prometheus /metrics (an SGLang server shows queueing when started"
    " with --enable-metrics; other servers may have none)"
)


def parse_metrics(text: str) -> dict[str, float]:
    """The series that matter, one number each (see module docstring), from Prometheus text."""
    sums: dict[str, float] = {}
    maxima: dict[str, float] = {}
    hist: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if not family.name.startswith(PREFIX):
            for sample in family.samples:  # the emulator's own lag counters (speed/emulator_lag.py)
                if sample.name == family.name + "_total":
                    parse_lag(family.name, sample.value, hist)
            continue
        for sample in family.samples:
            short = sample.name.removeprefix(PREFIX)
            if short in GAUGES_SUMMED:
                sums[short] = sums.get(short, 0.0) + float(sample.value)
            elif short in GAUGES_MAX:
                maxima[short] = max(maxima.get(short, float("-inf")), float(sample.value))
            elif short.endswith(("_sum", "_count")) and short.rsplit("_", 1)[0] in HISTOGRAMS:
                hist[short] = hist.get(short, 0.0) + float(sample.value)
    return {**sums, **maxima, **hist}


def merge(parts: list[dict[str, float]]) -> dict[str, float]:
    """Several servers' parsed series as one server's: GAUGES_MAX by their maximum, the rest summed."""
    out: dict[str, float] = {}
    for part in parts:
        for key, value in part.items():
            if key in GAUGES_MAX:
                out[key] = max(out.get(key, float("-inf")), value)
            else:
                out[key] = out.get(key, 0.0) + value
    return out


@dataclass
class MetricsSampler:
    """Scrapes /metrics in a thread while a scenario runs (a context manager): fast as requests start
    running, every `interval_s` once they have run a while (scrape_schedule.py)."""

    base_url: str
    folder: RunFolder | None = None
    scenario: str = "scenario"
    api_key: str | None = None
    interval_s: float = SAMPLE_INTERVAL_S
    first_interval_s: float = FIRST_INTERVAL_S
    warmup_requests: int = BENCH_SERVING_WARMUP_REQUESTS
    """The client's warm-up requests before the measured ones: the schedule's fast start waits for them."""
    servers: tuple[str, ...] = ()
    """The servers behind a router (their base URLs): scraped instead of base_url, read as one."""
    samples: list[dict[str, Any]] = field(default_factory=list)
    note: str | None = None
    _loop: BackgroundLoop | None = field(default=None, repr=False)
    _client: httpx.Client | None = field(default=None, repr=False)
    _t0: float = 0.0

    def __enter__(self) -> MetricsSampler:
        # one client for every scrape, made before the scenario starts: building one costs tens of
        # milliseconds on a loaded machine, as long as a whole smoke scenario
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        self._client = httpx.Client(timeout=min(5.0, max(self.interval_s, 1.0)), headers=headers, verify=verified_tls())
        self._t0 = time.monotonic()
        self.scrape_once(self._client)  # the baseline before the first request (histogram counters are cumulative)
        self._loop = BackgroundLoop(f"metrics-{self.scenario}", self._run).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.stop(timeout=10)
        try:
            self.scrape_once(self._client)  # the final counters (histogram sums) after the last request
        finally:
            if self._client is not None:
                self._client.close()

    def _run(self, stopping: threading.Event) -> None:
        schedule = ScrapeSchedule(
            self.warmup_requests, interval_s=self.interval_s, first_interval_s=self.first_interval_s
        )
        wait = self._next_wait(schedule)  # after the baseline scrape
        while not stopping.is_set():
            stopping.wait(wait)
            if stopping.is_set() or not self.scrape_once(self._client):
                return
            wait = self._next_wait(schedule)

    def _next_wait(self, schedule: ScrapeSchedule) -> float:
        """The schedule's wait after the latest sample (a missed scrape keeps the last one's busy or idle)."""
        latest = self.samples[-1] if self.samples else {"t": 0.0}
        read: dict[str, Any] = next((s for s in reversed(self.samples) if "error" not in s), {})
        busy = bool(read.get("num_running_reqs") or read.get("num_queue_reqs"))
        return schedule.after(float(latest["t"]), busy)

    def scrape_once(self, client: httpx.Client | None = None) -> bool:
        """One sample; False when the server has no usable /metrics (recorded in `note`)."""
        if self.note:
            return False
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        parts = []
        for url in self.servers or (self.base_url,):
            try:
                resp = (
                    client.get(url.rstrip("/") + "/metrics")
                    if client
                    else httpx.get(url.rstrip("/") + "/metrics", headers=headers, timeout=5.0)
                )
            except httpx.HTTPError as exc:
                self.samples.append({"t": round(time.monotonic() - self._t0, 3), "error": type(exc).__name__})
                return True  # a busy server may miss one scrape; keep trying
            where = f" at {url}" if self.servers else ""
            if resp.status_code == 404:
                self.note = METRICS_OFF + where
                return False
            if resp.status_code != 200:
                self.note = f"metrics not readable: GET /metrics answered {resp.status_code}{where}"
                return False
            try:
                parts.append(parse_metrics(resp.text))
            except ValueError as exc:
                self.note = f"metrics not readable{where}: {exc}"
                return False
        row = {"t": round(time.monotonic() - self._t0, 3), **merge(parts)}
        self.samples.append(row)
        if self.folder is not None:
            self.folder.append_jsonl(self.folder.metrics_series(self.scenario), row)
        return True

    def summary(self) -> dict[str, Any]:
        return summarise(self.samples, self.note)


def _series(samples: list[dict[str, Any]], key: str) -> list[float]:
    return [float(s[key]) for s in samples if isinstance(s.get(key), (int, float))]


def _histogram_mean_ms(samples: list[dict[str, Any]], name: str) -> float | None:
    """Mean over the requests observed during the scenario: last printed value minus the first
    sample's (a histogram SGLang has not printed yet has observed nothing: zero)."""
    sums, counts = _series(samples, f"{name}_sum"), _series(samples, f"{name}_count")
    if not sums or not counts or not samples:
        return None
    first = samples[0]
    sum0, count0 = float(first.get(f"{name}_sum", 0.0)), float(first.get(f"{name}_count", 0.0))
    if counts[-1] - count0 <= 0:
        return None
    return 1000.0 * (sums[-1] - sum0) / (counts[-1] - count0)


STEADY_SHARE = 0.9
"""The steady state: from the first sample running at least this share of the peak to the last one."""


def steady_window(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The samples of the steady state: the ramp-up before the running count first comes within
    STEADY_SHARE of its peak, and the tail after it last does (requests draining once the client
    has sent its last one), are left out. A server that never runs what was asked has a low peak,
    so its window still shows it."""
    running = [s.get("num_running_reqs") for s in samples]
    values = [float(r) for r in running if isinstance(r, (int, float))]
    peak = max(values, default=0.0)
    if peak <= 0:
        return []
    inside = [i for i, r in enumerate(running) if isinstance(r, (int, float)) and r >= STEADY_SHARE * peak]
    return samples[inside[0] : inside[-1] + 1]


def summarise(samples: list[dict[str, Any]], note: str | None = None) -> dict[str, Any]:
    """Peak queued, mean and peak running, peak KV usage, cache hit rate, throughput, accept length;
    `mean_running`, `steady_queued` and `steady_token_usage` over the steady-state window
    (`steady_window`: ramp-up and tail excluded), the peaks over every sample."""
    good = [s for s in samples if "error" not in s]
    if not good:
        return {"samples": 0, "note": note or "no /metrics sample was taken"}
    running = _series(good, "num_running_reqs")
    busy = [r for r in running if r > 0]
    steady = steady_window(good)
    steady_running = [r for r in _series(steady, "num_running_reqs") if r > 0]
    out: dict[str, Any] = {
        "samples": len(good),
        "peak_running": max(running) if running else None,
        "mean_running": round(statistics.fmean(steady_running), 2) if steady_running else 0.0,
        "busy_samples": len(busy),
        "steady_samples": len(steady),
        "steady_queued": max(_series(steady, "num_queue_reqs"), default=None),
        "steady_token_usage": max(_series(steady, "token_usage"), default=None),
        "peak_queued": max(_series(good, "num_queue_reqs"), default=None),
        "peak_token_usage": max(_series(good, "token_usage"), default=None),
        "peak_used_tokens": max(_series(good, "num_used_tokens"), default=None),
        "max_total_num_tokens": max(_series(good, "max_total_num_tokens"), default=None),
        "cache_hit_rate": max(_series(good, "cache_hit_rate"), default=None),
        "mean_gen_throughput": _mean_positive(_series(good, "gen_throughput")),
        "spec_accept_length": _mean_positive(_series(good, "spec_accept_length")),
        "server_mean_ttft_ms": _histogram_mean_ms(good, "time_to_first_token_seconds"),
        "server_mean_itl_ms": _histogram_mean_ms(good, "inter_token_latency_seconds"),
    }
    lag = lag_change(good)
    if lag is not None:
        out["emulator_lag"] = lag
    if note:
        out["note"] = note
    return out


def _mean_positive(values: list[float]) -> float | None:
    positive = [v for v in values if v > 0]
    return round(statistics.fmean(positive), 3) if positive else None
