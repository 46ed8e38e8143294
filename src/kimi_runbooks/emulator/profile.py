"""The emulator's latency profile, derived from the prediction for a plan.

One model for the emulator: a rehearsal on any platform (with or without published results)
behaves like that platform's prediction. The profile carries the prediction itself, sampled
(emulator/latency.py interpolates between the samples):

* TTFT(input): the predicted prefill of one request alone at TABLE_INPUTS (no queue: the
  emulator's prefill lanes and KV admission add the queueing themselves);
* prefill after a cached prefix (new tokens x cached tokens, PREFILL_NEW x PREFILL_CACHED): the
  predicted prefill of the new tokens over the whole context (Predictor.prefill_seconds with a
  prefix hit), so a cache hit in a rehearsal saves what the prediction's prefix= saves;
* ITL(running, context per request): the predicted decode step per output token on the grid
  TABLE_RUNNING x TABLE_CONTEXTS (speculative decoding: per accepted token);
* KV capacity = the planner's pool (all DP-attention ranks), running limit = the plan's (a hybrid
  model's state pool lowers it where it admits fewer, as SGLang does);
* prefill lanes = the prefill pool's DP-attention ranks x replicas; decode stalls for prefill
  unless the deployment is PD-disaggregated (the emulator schedules prefill first, as SGLang
  does and as perfmodel.queueing assumes).

The straight lines of the older profile (TTFT = base + per-1K x input; ITL = base + per-running
x running + per-1K-KV x KV + per-1K-context x context) are still fitted by least squares on
relative error over the same samples, as a summary a reader can compare across platforms.
"""

from __future__ import annotations

import numpy as np

from ..perfmodel.predict import Predictor
from ..plan import LaunchPlan
from .latency import DEFAULT_PROFILE, LatencyProfile

PROFILE_INPUTS = (256, 1024, 2048, 4096, 8192, 16384)
PROFILE_BATCHES = (1, 2, 4, 8, 16, 32, 64)
PROFILE_CONTEXTS = (1024, 4096, 16384)
TABLE_INPUTS: tuple[int, ...] = (1, 128, 512, 1024, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576)
TABLE_INPUTS += (32768, 49152, 65536, 98304, 131072, 196608, 262144)  # x1.5 steps: attention is quadratic
TABLE_RUNNING = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TABLE_CONTEXTS = (128, 1024, 4096, 16384, 65536, 262144)
PREFILL_CACHED = (0, 1024, 4096, 16384, 65536, 262144)
PREFILL_NEW: tuple[int, ...] = (1, 128, 512, 2048, 8192, 32768, 131072, 262144)
MIN_MS = 0.1


def latency_profile(plan: LaunchPlan, predictor: Predictor | None = None) -> LatencyProfile:
    predictor = predictor or Predictor(plan)
    s = predictor.serving
    decode, prefill = s.decode_pool, s.prefill_pool
    xs = np.asarray(PROFILE_INPUTS, dtype=float)
    ttft = np.asarray([predictor.prefill_seconds(prefill, x) * 1000 for x in xs])
    slope, base = np.polyfit(xs / 1000.0, ttft, 1, w=1.0 / ttft)  # relative error, not absolute
    accept = 1.0  # tokens per decode step: speculative decoding accepts several per verify step
    if decode.speculative is not None:
        from ..perfmodel.predict import DEFAULT_ACCEPT_LENGTH

        accept = min(DEFAULT_ACCEPT_LENGTH, float(decode.speculative.draft_tokens))
    rows, ys = [], []
    for ctx in PROFILE_CONTEXTS:
        cap = decode.capacity_requests(ctx)
        for b in PROFILE_BATCHES:
            if b > max(cap, 1):
                continue
            rows.append([1.0, b, b * ctx / 1000.0, ctx / 1000.0])
            ys.append(predictor.iteration_seconds(decode, b, ctx) * 1000 / accept)
    a, y = np.asarray(rows), np.asarray(ys)
    coef, *_ = np.linalg.lstsq(a / y[:, None], np.ones_like(y), rcond=None)  # relative error
    itl_base, per_running, per_kv, per_ctx = (float(c) for c in coef)
    ttft_table = tuple((float(x), predictor.prefill_seconds(prefill, x) * 1000) for x in TABLE_INPUTS)
    itl_table = tuple(
        tuple(predictor.iteration_seconds(decode, b, ctx) * 1000 / accept for ctx in TABLE_CONTEXTS)
        for b in TABLE_RUNNING
    )
    prefill_grid = tuple(
        tuple(predictor.prefill_seconds(prefill, new + cached, cached / (new + cached)) * 1000 for new in PREFILL_NEW)
        for cached in PREFILL_CACHED
    )
    capacity = decode.kv_pool_tokens * decode.attention_ranks * decode.replicas
    running = decode.max_running * decode.replicas if decode.max_running else DEFAULT_PROFILE.max_running_requests
    if decode.state_requests is not None:  # a hybrid model's state pool caps the batch (SGLang resolve_max_num_reqs)
        running = min(running, decode.state_requests * decode.replicas)
    where = f"{plan.platform.id}/{plan.model.id}" + (f"/{plan.deployment.id}" if plan.deployment else "")
    return LatencyProfile(
        ttft_base_ms=max(float(base), MIN_MS),
        ttft_per_1k_input_ms=max(float(slope), 0.0),
        itl_base_ms=max(itl_base, MIN_MS),
        itl_per_running_ms=max(per_running, 0.0),
        itl_per_1k_kv_ms=max(per_kv, 0.0),
        itl_per_1k_context_ms=max(per_ctx, 0.0),
        max_total_num_tokens=max(int(capacity), 1),
        max_running_requests=int(running),
        ttft_table=ttft_table,
        itl_running=tuple(float(b) for b in TABLE_RUNNING),
        itl_context=tuple(float(c) for c in TABLE_CONTEXTS),
        itl_table=itl_table,
        prefill_cached=tuple(float(c) for c in PREFILL_CACHED),
        prefill_new=tuple(float(n) for n in PREFILL_NEW),
        prefill_grid=prefill_grid,
        prefill_lanes=max(prefill.attention_ranks * prefill.replicas, 1),
        prefill_stalls_decode=not s.disaggregated,
        spec_accept_length=accept if decode.speculative is not None else 0.0,
        source=f"predicted by kimi_runbooks.perfmodel for {where} ({predictor.calibration.source})",
    )
