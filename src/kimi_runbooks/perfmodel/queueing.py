"""From step times to what a benchmark sees: batch, queueing, TTFT, TPOT and throughput.

Closed loop (bench_serving --max-concurrency C): C clients, each sends its next request when
the previous one ends. A fixed point over the completion rate X:

* running requests B = min(C, KV capacity): the KV pool (memory planner) caps how many
  requests hold a context at once; the rest queue (Little's law: E2E = C / X);
* prefill occupies the mixed pool a fraction rho = X x prefill time (divided by the DP-attention
  ranks, which prefill different requests in the same forward pass), so decode slows by
  1 / (1 - rho) (TPOT) and a new request waits for prefills ahead of it (M/D/1 residual);
* TPOT = decode step time per output token (speculative: step / accept length) / (1 - rho);
* PD disaggregation: prefill runs in its own pool (rho there), the decode pool sees no
  prefill, and TTFT adds the KV transfer between pools. Each pool's throughput limits the
  whole: completions cannot outrun what the prefill pool serves (its lanes over one prefill's
  busy time); clients beyond that wait in the prefill queue (Little's law, as for the KV cap),
  and the decode pool's KV slots cap its running batch.

Fixed lengths (bench_serving --random-range-ratio 1.0) in a mixed pool: the C clients start
together and SGLang's scheduler runs a waiting prefill before any decode step
(sgl-project/sglang python/sglang/srt/managers/scheduler.py, get_next_batch_to_run: "Run
prefill first if possible"), so a wave of C prefills runs back to back while every decode
waits, the C requests then decode together and finish together, and the next wave arrives at
once: the clients stay in lock-step (synchronized_waves). The k-th request of a wave sees its
first token after k prefills (median (C+1)/2 of them, the last C) and then waits for the rest
of the wave's prefills before its second token. Lengths that vary (the default range ratio)
spread the finishes out, and PD disaggregation decodes each request as soon as its KV lands,
so both break the lock-step after the first wave: the fixed point above applies.

Open loop (a request rate): X = rate unless it exceeds what the pools can serve (saturated).
A finite benchmark (num_prompts N) drains at the end: the mean number in flight is taken as
C (1 - C / 2N), which matches the printed "Concurrency" of the published runs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

MAX_ITER = 60


@dataclass(frozen=True)
class Timing:
    """What a pool costs for one scenario, in seconds: callables of the decoding batch."""

    prefill: float  # one request's prefill, alone
    token_time: Callable[[float], float]  # decode seconds per output token at batch B
    step_time: Callable[[float], float]  # seconds per decode iteration at batch B
    transfer: float  # PD only: KV transfer prefill -> decode
    capacity: int  # requests whose KV fits at once
    disaggregated: bool
    prefill_lanes: int = 1  # requests prefilling side by side (DP-attention ranks x replicas)
    prefill_occupancy: float = 0.0
    """Seconds one prefill keeps the pool busy when that is less than its latency (a pipelined
    pool: the deepest stage's work, pipeline.pipelined_prefill); 0: the latency."""

    @property
    def prefill_share(self) -> float:
        """Pool time one request's prefill takes when lanes run side by side."""
        return (self.prefill_occupancy or self.prefill) / max(self.prefill_lanes, 1)


@dataclass(frozen=True)
class Outcome:
    ttft_s: float
    tpot_s: float
    itl_s: float
    completions_per_s: float
    running: float
    output_tok_s: float
    prefill_busy: float
    kv_limited: bool
    saturated: bool


def _in_flight(concurrency: float, num_prompts: int | None) -> float:
    if not num_prompts or num_prompts <= concurrency:
        return concurrency if not num_prompts else max(num_prompts / 2.0, 1.0)
    return concurrency * (1.0 - concurrency / (2.0 * num_prompts))


def closed_loop(
    t: Timing, concurrency: int, output_len: int, num_prompts: int | None = None, fixed_lengths: bool = False
) -> Outcome:
    if fixed_lengths and concurrency > 1 and not t.disaggregated:
        return synchronized_waves(t, concurrency, output_len, num_prompts)
    clients = _in_flight(float(concurrency), num_prompts)
    slots = float(min(clients, t.capacity))
    decode_tokens = max(output_len - 1, 0)
    x, batch = 0.0, max(slots, 1.0)
    ttft = tpot = e2e = 0.0
    rho = 0.0
    for _ in range(MAX_ITER):
        prefill_rho = min(x * t.prefill_share, 0.95)
        rho = prefill_rho if not t.disaggregated else 0.0
        tpot = t.token_time(batch) / (1.0 - rho)
        wait = prefill_rho / (1.0 - prefill_rho) * t.prefill / 2.0
        ttft = t.prefill + wait + t.step_time(batch) / 2.0 + t.transfer
        e2e = ttft + decode_tokens * tpot
        x_new = slots / e2e
        batch_new = max(slots * decode_tokens * tpot / e2e, 1.0)
        if abs(x_new - x) <= 1e-9 + 1e-6 * x_new and abs(batch_new - batch) < 1e-6 * batch_new:
            x, batch = x_new, batch_new
            break
        x, batch = 0.5 * (x + x_new), 0.5 * (batch + batch_new)
    kv_limited = clients > t.capacity
    prefill_bound = t.disaggregated and x * t.prefill_share > 1.0
    if prefill_bound:  # the prefill pool serves at most lanes / busy time: the rest queue there
        x = 1.0 / t.prefill_share
        batch = max(min(x * decode_tokens * t.token_time(batch), slots), 1.0)
        tpot = t.token_time(batch)
    if kv_limited or prefill_bound:  # the rest wait for a slot: E2E = clients / X (Little)
        ttft = clients / x - decode_tokens * tpot
    return Outcome(
        ttft, tpot, t.token_time(batch), x, batch, x * output_len, min(x * t.prefill_share, 1.0), kv_limited, False
    )


STEADY_WAVES = 10
"""Waves followed when a scenario gives no prompt count (the first wave's fill counts 1 in 10)."""


def synchronized_waves(t: Timing, concurrency: int, output_len: int, num_prompts: int | None = None) -> Outcome:
    """Closed loop with fixed lengths on a mixed pool, followed wave by wave (module doc): a
    wave takes the requests waiting when it starts, at most what the KV pool holds to the end
    (t.capacity), prefills them back to back (prefill first) and decodes them together; the
    clients whose requests finished send the next ones as it ends; requests the pool could not
    take wait for the next wave. Medians are over every request, as bench_serving takes them."""
    total = num_prompts or STEADY_WAVES * concurrency
    clients = min(concurrency, total)
    limit = max(min(clients, t.capacity), 1)
    decode_tokens = max(output_len - 1, 0)
    share, lanes_first = t.prefill_share, t.prefill - t.prefill_share
    waiting = [0.0] * clients  # send times of the requests not yet in a wave
    sent, now, busy = clients, 0.0, 0.0
    ttfts: list[float] = []
    tpots: list[float] = []
    while waiting:
        size = min(limit, len(waiting))
        wave, waiting = waiting[:size], waiting[size:]
        token, step = t.token_time(size), t.step_time(size)
        for k, sent_at in enumerate(wave, start=1):
            ttfts.append(now + lanes_first + k * share + step / 2.0 - sent_at)  # k prefills done (per lane)
            stall = (size - k) * share  # ... and the rest of the wave's before its second token
            tpots.append(token + stall / decode_tokens if decode_tokens else token)
        busy += size * share
        now += size * share + decode_tokens * token + step / 2.0
        more = min(size, total - sent)  # the finished clients send again
        waiting += [now] * more
        sent += more
    x = total / now
    return Outcome(
        statistics.median(ttfts),
        statistics.median(tpots),
        t.token_time(limit),
        x,
        float(limit),
        x * output_len,
        min(busy / now, 1.0),
        clients > t.capacity,
        False,
    )


def open_loop(t: Timing, rate: float, output_len: int) -> Outcome:
    decode_tokens = max(output_len - 1, 0)
    prefill_rho = rate * t.prefill_share
    batch, tpot, saturated = 1.0, t.token_time(1.0), prefill_rho >= 1.0
    if not saturated:
        rho = 0.0 if t.disaggregated else prefill_rho
        for _ in range(MAX_ITER):
            tpot = t.token_time(batch) / (1.0 - rho)
            batch_new = max(rate * decode_tokens * tpot, 1.0)
            if batch_new > t.capacity:
                saturated = True
                break
            if abs(batch_new - batch) < 1e-6 * batch_new:
                batch = batch_new
                break
            batch = 0.5 * (batch + batch_new)
    if saturated:
        served = min(rate, 1.0 / max(t.prefill_share, 1e-9), t.capacity / max(decode_tokens * tpot, 1e-9))
        return Outcome(
            math.inf,
            tpot,
            t.token_time(batch),
            served,
            float(min(batch, t.capacity)),
            served * output_len,
            min(prefill_rho, 1.0),
            batch >= t.capacity,
            True,
        )
    wait = prefill_rho / (1.0 - prefill_rho) * t.prefill / 2.0
    ttft = t.prefill + wait + t.step_time(batch) / 2.0 + t.transfer
    return Outcome(ttft, tpot, t.token_time(batch), rate, batch, rate * output_len, prefill_rho, False, False)


def steady_decode(t: Timing, concurrency: int) -> Outcome:
    """Every request decoding, none arriving (a fixed-duration decode test)."""
    batch = float(concurrency)
    tpot = t.token_time(batch)
    return Outcome(t.prefill, tpot, tpot, 0.0, batch, batch / tpot, 0.0, concurrency > t.capacity, False)
