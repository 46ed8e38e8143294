"""The emulator's latency profile, derived from the prediction for a plan.

One model for the emulator: a rehearsal on any platform (with or without published results)
behaves like that platform's prediction. The emulator's profile is linear (emulator/latency.py),
so the prediction is sampled over the range a runbook exercises and fitted by least squares:

* TTFT(input) = base + per-1K x input, over PROFILE_INPUTS (prefill alone, no queue: the
  emulator's scheduler adds queueing itself); least squares on relative error, since the
  prediction is curved (attention is quadratic in the input);
* ITL(running, KV in use) = base + per-running x running + per-1K-KV x KV tokens / 1000
  + per-1K-context x KV tokens per running request / 1000, over PROFILE_BATCHES x
  PROFILE_CONTEXTS (decode step per output token, KV-capped batches only);
* KV capacity = the planner's pool (all DP-attention ranks), running limit = the plan's;
* prefill lanes = the prefill pool's DP-attention ranks x replicas; decode stalls for prefill
  unless the deployment is PD-disaggregated (the emulator schedules prefill first, as SGLang
  does and as perfmodel.queueing assumes).
"""

from __future__ import annotations

import numpy as np

from ..emulator.latency import DEFAULT_PROFILE, LatencyProfile
from ._deps import LaunchPlan
from .predict import Predictor

PROFILE_INPUTS = (256, 1024, 2048, 4096, 8192, 16384)
PROFILE_BATCHES = (1, 2, 4, 8, 16, 32, 64)
PROFILE_CONTEXTS = (1024, 4096, 16384)
MIN_MS = 0.1


def latency_profile(plan: LaunchPlan, predictor: Predictor | None = None) -> LatencyProfile:
    predictor = predictor or Predictor(plan)
    s = predictor.serving
    decode, prefill = s.decode_pool, s.prefill_pool
    xs = np.asarray(PROFILE_INPUTS, dtype=float)
    ttft = np.asarray([predictor.prefill_seconds(prefill, x) * 1000 for x in xs])
    slope, base = np.polyfit(xs / 1000.0, ttft, 1, w=1.0 / ttft)  # relative error, not absolute
    accept = 1.0
    if decode.speculative is not None:
        from .predict import DEFAULT_ACCEPT_LENGTH

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
    capacity = decode.kv_pool_tokens * decode.attention_ranks * decode.replicas
    running = decode.max_running * decode.replicas if decode.max_running else DEFAULT_PROFILE.max_running_requests
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
        prefill_lanes=max(prefill.attention_ranks * prefill.replicas, 1),
        prefill_stalls_decode=not s.disaggregated,
        source=f"predicted by kimi_runbooks.perfmodel for {where} ({predictor.calibration.source})",
    )
