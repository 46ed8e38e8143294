"""The emulator's latency model, and how it is fitted from published speed results.

The model is deliberately small, with one number per effect a runbook measures:

* TTFT (time to first token, from request arrival) =
  queue wait + ``ttft_base_ms`` + ``ttft_per_1k_input_ms`` x input_tokens / 1000.
  Queue wait is whatever the scheduler adds while KV capacity or the running-request
  limit is exhausted, so TTFT rises under overload the way it does on a real server.
* ITL (inter-token latency, between consecutive streamed tokens of one request) =
  ``itl_base_ms`` + ``itl_per_running_ms`` x (number of running requests)
  + ``itl_per_1k_kv_ms`` x (KV tokens the running requests hold) / 1000
  + ``itl_per_1k_context_ms`` x (those KV tokens per running request) / 1000.
  Decode batches get slower as they grow and as their contexts do (every step reads each
  running request's KV; one long request's attention also has a latency of its own); the
  two KV terms are 0 unless the profile comes from the predictor. A caller that does not
  say how much KV is held gets ``assumed_context_tokens`` per running request.
* Prefix cache (emulator/radix.py): prompt tokens already cached skip prefill; the rest costs
  ``prefill_grid`` (new tokens x cached tokens, from the predictor) or, without one, what a
  prompt of only the new tokens would.
* KV capacity: a request reserves input_tokens + max_new_tokens of ``max_total_num_tokens``
  while it runs; at most ``max_running_requests`` run at once; the rest wait (FIFO).
* Prefill first, as SGLang schedules (emulator/prefill.py): prefills run one after another on
  each of ``prefill_lanes`` lanes (DP-attention ranks x replicas), so a burst of arrivals waits
  for the prefills ahead of it, and running requests' next tokens wait while a prefill runs
  (unless ``prefill_stalls_decode`` is false: a PD-disaggregated decode pool).

All durations are multiplied by the emulator's ``time_scale`` when they are slept.

A profile from the performance model also carries the prediction itself, sampled: TTFT at a
range of input lengths (``ttft_table``) and ITL on a grid of running requests x context per
request (``itl_table``); the emulator interpolates them, and the lines above are kept as a
summary (and for profiles fitted from references, which have no tables).

Where the numbers come from: ``--profile <platform>`` takes them from the performance model
(``kimi_runbooks.emulator.profile.latency_profile``: the prediction for that platform's default plan,
or the plan the emulator's SGLang flags describe), so every platform, with or without
published results, rehearses like its prediction. ``--profile-from references`` keeps the
older straight-line fit of the platform's own published rows, described next.

``profile_from_references`` fits those numbers from params/references/*.yaml documents
of ``kind: speed`` (bench_serving results) or ``kind: matrix`` (context x concurrency
rows) whose ``platform`` matches: TTFT base/slope by least squares over
single-concurrency rows (slope left at the default when only one input length exists;
input length = ``input_len`` or total_input_tokens / completed), ITL base/slope by least
squares of median ITL against concurrency over every row (a negative intercept is
pinned at 25% of the smallest measurement and the slope refit), and
capacity from a ``max_total_num_tokens`` field when a reference gives one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from .grid import interpolate, interpolate_grid

log = logging.getLogger(__name__)

_MIN_MS = 0.1  # fitted values are clipped to stay positive and sleepable


@dataclass(frozen=True)
class LatencyProfile:
    """Parameters of the latency model (milliseconds and tokens); see the module docstring."""

    ttft_base_ms: float = 200.0
    ttft_per_1k_input_ms: float = 20.0
    itl_base_ms: float = 10.0
    itl_per_running_ms: float = 0.3
    max_total_num_tokens: int = 500_000
    max_running_requests: int = 1024
    source: str = "default"
    itl_per_1k_kv_ms: float = 0.0
    itl_per_1k_context_ms: float = 0.0
    assumed_context_tokens: int = 2048
    prefill_lanes: int = 1
    prefill_stalls_decode: bool = True
    ttft_table: tuple[tuple[float, float], ...] = ()
    itl_running: tuple[float, ...] = ()
    itl_context: tuple[float, ...] = ()
    itl_table: tuple[tuple[float, ...], ...] = ()
    prefill_cached: tuple[float, ...] = ()
    prefill_new: tuple[float, ...] = ()
    prefill_grid: tuple[tuple[float, ...], ...] = ()
    """Prefill after a cached prefix: ms at prefill_cached[i] cached x prefill_new[j] new tokens."""
    spec_accept_length: float = 0.0
    """Tokens per speculative verify step the ITL tables divide by (0: no speculative decoding)."""

    def prefill_ms(self, input_tokens: int, cached_tokens: int = 0) -> float:
        """Prefill time when the prefix cache already holds `cached_tokens` of the input: the new
        tokens' projections and their attention over the whole context (prefill_grid, from the
        performance model); without a grid, the new tokens alone as a prompt of their own."""
        cached = min(max(int(cached_tokens), 0), max(int(input_tokens) - 1, 0))
        if cached == 0:
            return self.ttft_ms(input_tokens)
        new = input_tokens - cached
        if self.prefill_grid:
            value = interpolate_grid(self.prefill_cached, self.prefill_new, self.prefill_grid, cached, new)
            return max(value, _MIN_MS)
        return self.ttft_ms(new)

    def ttft_ms(self, input_tokens: int) -> float:
        """Prefill time for a request of this many input tokens (excluding queue wait): the
        sampled prediction (ttft_table, interpolated) when there is one, else the line."""
        if self.ttft_table:
            return max(interpolate(self.ttft_table, float(input_tokens)), _MIN_MS)
        return self.ttft_base_ms + self.ttft_per_1k_input_ms * input_tokens / 1000.0

    def itl_ms(self, running_requests: int, kv_tokens: int | None = None) -> float:
        """Time between two tokens of one request while this many requests run, holding
        `kv_tokens` of KV cache between them (unknown: `assumed_context_tokens` each): the
        sampled prediction (itl_table over itl_running x itl_context tokens per request,
        interpolated) when there is one, else the plane."""
        running = max(running_requests, 0)
        kv = max(kv_tokens if kv_tokens is not None else running * self.assumed_context_tokens, 0)
        per_request = kv / running if running else 0.0
        if self.itl_table:
            value = interpolate_grid(self.itl_running, self.itl_context, self.itl_table, max(running, 1), per_request)
            return max(value, _MIN_MS)
        return (
            self.itl_base_ms
            + self.itl_per_running_ms * running
            + self.itl_per_1k_kv_ms * kv / 1000.0
            + self.itl_per_1k_context_ms * per_request / 1000.0
        )


DEFAULT_PROFILE = LatencyProfile()


@dataclass(frozen=True)
class SpeedPoint:
    """One published measurement reduced to what the fit needs."""

    input_len: float
    concurrency: float
    ttft_ms: float | None
    itl_ms: float | None


def profile_from_references(platform_id: str, params_dir: Path) -> LatencyProfile:
    """Fit a LatencyProfile from every speed/matrix reference for ``platform_id``.

    Returns DEFAULT_PROFILE (with a log line) when the platform has no usable reference.
    """
    docs = list(_reference_docs(platform_id, Path(params_dir)))
    points = [p for doc in docs for p in _points_from_doc(doc)]
    if not points:
        log.warning("no speed references for platform %r in %s; using the default profile", platform_id, params_dir)
        return DEFAULT_PROFILE
    profile = fit_profile(points, capacity=_capacity_from_docs(docs))
    ids = ",".join(str(doc.get("id", "?")) for doc in docs)
    return replace(profile, source=f"fitted from {ids}")


def fit_profile(points: list[SpeedPoint], capacity: int | None = None) -> LatencyProfile:
    """Least-squares fit of the model to speed points; missing pieces keep the defaults."""
    d = DEFAULT_PROFILE
    ttft_base, ttft_slope = _fit_ttft(points, d)
    itl_base, itl_slope = _fit_itl(points, d)
    return LatencyProfile(
        ttft_base_ms=ttft_base,
        ttft_per_1k_input_ms=ttft_slope,
        itl_base_ms=itl_base,
        itl_per_running_ms=itl_slope,
        max_total_num_tokens=int(capacity) if capacity else d.max_total_num_tokens,
        max_running_requests=d.max_running_requests,
        source="fitted",
    )


def _fit_ttft(points: list[SpeedPoint], d: LatencyProfile) -> tuple[float, float]:
    rows = [
        (p.input_len / 1000.0, p.ttft_ms)
        for p in points
        if p.concurrency == 1 and p.ttft_ms is not None and p.ttft_ms > 0
    ]
    if not rows:  # no single-user rows: use the lowest concurrency available
        lowest = min((p.concurrency for p in points if p.ttft_ms), default=None)
        rows = [(p.input_len / 1000.0, p.ttft_ms) for p in points if p.concurrency == lowest and p.ttft_ms]
    if not rows:
        return d.ttft_base_ms, d.ttft_per_1k_input_ms
    if len({x for x, _ in rows}) < 2:
        slope = d.ttft_per_1k_input_ms
        return max(_mean([y - slope * x for x, y in rows]), _MIN_MS), slope
    return _fit_line(rows)


def _fit_itl(points: list[SpeedPoint], d: LatencyProfile) -> tuple[float, float]:
    rows = [(p.concurrency, p.itl_ms) for p in points if p.itl_ms is not None and p.itl_ms > 0]
    if not rows:
        return d.itl_base_ms, d.itl_per_running_ms
    if len({x for x, _ in rows}) < 2:
        return max(_mean([y for _, y in rows]), _MIN_MS), 0.0
    return _fit_line(rows)


_BASE_FLOOR = 0.25  # intercepts are kept >= this fraction of the smallest measured value


def _fit_line(rows: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (base, slope) with slope >= 0 and a positive base.

    Published rows are not linear (prefix caching, different output lengths per
    scenario), so plain least squares can give a negative intercept.  Then the
    intercept is pinned at _BASE_FLOOR x the smallest measurement and the slope refit
    by least squares with that intercept fixed.
    """
    base, slope = _least_squares(rows)
    if slope < 0:
        return max(_mean([y for _, y in rows]), _MIN_MS), 0.0
    floor = max(_BASE_FLOOR * min(y for _, y in rows), _MIN_MS)
    if base < floor:
        base = floor
        sxx = sum(x * x for x, _ in rows)
        slope = max(sum(x * (y - base) for x, y in rows) / sxx, 0.0) if sxx else 0.0
    return base, slope


def _least_squares(rows: list[tuple[float, float]]) -> tuple[float, float]:
    """Intercept and slope of the ordinary least-squares line through (x, y) rows."""
    mx = _mean([x for x, _ in rows])
    my = _mean([y for _, y in rows])
    sxx = sum((x - mx) ** 2 for x, _ in rows)
    sxy = sum((x - mx) * (y - my) for x, y in rows)
    slope = sxy / sxx if sxx else 0.0
    return my - slope * mx, slope


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _reference_docs(platform_id: str, params_dir: Path) -> Iterable[dict[str, Any]]:
    """Reference documents (speed or matrix) whose platform matches, from references/ or the dir itself."""
    folders = [params_dir / "references", params_dir]
    seen: set[Path] = set()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.y*ml")):
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            doc = _load_yaml(path)
            if not isinstance(doc, dict) or doc.get("kind") not in ("speed", "matrix"):
                continue
            if str(doc.get("platform", "")).lower() == platform_id.lower():
                yield doc


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        log.warning("skipping unreadable reference %s: %s", path, exc)
        return None


def _points_from_doc(doc: dict[str, Any]) -> list[SpeedPoint]:
    if doc.get("kind") == "speed":
        return [p for r in doc.get("results") or [] if (p := _point_from_result(r))]
    return [p for r in doc.get("rows") or [] if (p := _point_from_matrix_row(r))]


def _point_from_result(result: Any) -> SpeedPoint | None:
    """A bench_serving result; input length and concurrency may sit beside or inside metrics."""
    if not isinstance(result, dict):
        return None
    found = result.get("metrics")
    metrics: dict[str, Any] = found if isinstance(found, dict) else {}
    concurrency = _first(result.get("max_concurrency"), metrics.get("max_concurrency"))
    return _make_point(
        _input_len(result, metrics), concurrency, metrics.get("median_ttft_ms"), metrics.get("median_itl_ms")
    )


def _input_len(result: dict[str, Any], metrics: dict[str, Any]) -> float | None:
    """Declared input length, else the mean measured one (total_input_tokens / completed)."""
    declared = _first(result.get("input_len"), metrics.get("random_input_len"), metrics.get("input_len"))
    if declared is not None:
        return declared
    total, completed = _number(metrics.get("total_input_tokens")), _number(metrics.get("completed"))
    return total / completed if total and completed else None


def _first(*values: Any) -> float | None:
    for value in values:
        number = _number(value)
        if number is not None:
            return number
    return None


_USABLE_STATUS = ("ok", "valid", "pass", "passed", "done", "success", "completed")


def _point_from_matrix_row(row: Any) -> SpeedPoint | None:
    """A context x concurrency cell.  Over-capacity, failed and queued cells are skipped
    (queued TTFT is mostly waiting).  When rows carry a phase, TTFT is taken from prefill
    rows only: decode rows measure TTFT on a warmed prompt cache."""
    if not isinstance(row, dict):
        return None
    if str(row.get("status", "ok")).strip().lower() not in _USABLE_STATUS:
        return None
    phase = str(row.get("phase") or "").lower()
    ttft = row.get("median_ttft_ms") if phase in ("", "prefill") else None
    return _make_point(row.get("context_tokens"), row.get("concurrency"), ttft, row.get("median_itl_ms"))


def _make_point(input_len: Any, concurrency: Any, ttft: Any, itl: Any) -> SpeedPoint | None:
    x = _number(input_len)
    c = _number(concurrency)
    if x is None or c is None or c <= 0:
        return None
    t, i = _number(ttft), _number(itl)
    if t is None and i is None:
        return None
    return SpeedPoint(input_len=x, concurrency=c, ttft_ms=t, itl_ms=i)


def _number(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).replace(",", "").replace("_", ""))
    except ValueError:
        return None


def _capacity_from_docs(docs: list[dict[str, Any]]) -> int | None:
    for doc in docs:
        value = _number(doc.get("max_total_num_tokens"))
        if value and value > 0:
            return int(value)
    return None
