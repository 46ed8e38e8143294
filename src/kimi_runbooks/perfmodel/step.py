"""Time of one forward pass of a pool: a decode step for a batch, or one prefill chunk.

First principles per device, then the family's efficiency factors:

* weights read: attention weights (split over the attention rank's devices), dense/shared FFN
  and lm_head (split over tp), and the routed experts the step's tokens touch
  (Geometry.distinct_experts), split over tp;
* latent KV read: every running request's whole context, on each device of its attention rank,
  or, when one request alone cannot fill the device, its context at a per-token latency (MLA
  layers only); a hybrid model's linear-attention layers add each request's recurrent state,
  read and written once per step, and FLOPs per token that do not grow with the context;
* FLOPs: 2 per weight per token (attention projections per rank, FFN/experts over tp), plus
  attention scores: decode reads the latent per context token, prefill is causal MHA
  (n x prefix + n^2 / 2 query-key pairs);
* GEMM time is the larger of weight bytes over bandwidth and FLOPs over peak (roofline);
  attention adds its own roofline; collectives add bandwidth time; every layer adds the fixed
  per-layer overhead.
"""

from __future__ import annotations

from dataclasses import dataclass

from .comm import allreduce_s, alltoall_s, group_link
from .factors import Factors
from .geometry import Geometry
from .hardware import HardwareSpec

ACT_BYTES = 2.0  # activations cross devices in bf16
ROOFLINE_P = 4.0  # p-norm smoothing of max(memory time, compute time); within 19% of max


@dataclass(frozen=True)
class Dtypes:
    dense: str
    expert: str


@dataclass(frozen=True)
class PoolShape:
    """The few numbers of a Pool the step model needs (kept apart so tests can build one).

    `spans_nodes`: the tp group (one pipeline stage) crosses a node boundary, so its collectives
    run at the NIC; `pp` stages and `stage_crosses_nodes` (consecutive stages sit on different
    nodes) are read by pipeline.py, never by the per-stage step below."""

    tp: int
    attention_ranks: int
    ep: int
    spans_nodes: bool
    pp: int = 1
    stage_crosses_nodes: bool = False

    @property
    def attention_tp(self) -> int:
        return max(self.tp // self.attention_ranks, 1)


@dataclass(frozen=True)
class StepTime:
    """Seconds per forward pass and its parts (overhead + linear + attention + comm).

    `kv_read`, `attn_compute` and `attn_latency` are the three sides of `attention` (the latent
    KV and state bytes over bandwidth, the score FLOPs over peak, one request's per-token
    latency), kept so `parts()` can say which one set it; a pass built without them (a test)
    counts its attention as compute."""

    overhead: float
    weight_read: float
    gemm: float
    attention: float
    comm: float
    kv_read: float = 0.0
    attn_compute: float = 0.0
    attn_latency: float = 0.0

    @property
    def linear(self) -> float:
        """Roofline of the GEMMs: the larger of bytes/bandwidth and FLOPs/peak, smoothed
        (a p-norm, p = ROOFLINE_P) so the calibration sees both sides near the ridge."""
        return _smooth_max(self.weight_read, self.gemm)

    @property
    def total(self) -> float:
        return self.overhead + self.linear + self.attention + self.comm

    def parts(self) -> dict[str, float]:
        """`total` split into what sets it (attribution.CATEGORIES), summing to `total`: a smoothed
        roofline (p-norm) is shared between its sides by their p-th powers, (a^p + b^p)^(1/p) =
        a^p/(a^p + b^p) x it + b^p/(a^p + b^p) x it; the batch side of attention is the larger of
        its KV bytes and its score FLOPs (a hard max: the larger one takes it)."""
        weights, compute = _split(self.linear, self.weight_read, self.gemm)
        batch = max(self.kv_read, self.attn_compute)
        on_batch, on_latency = _split(self.attention, batch, self.attn_latency)
        if batch == 0.0 and self.attn_latency == 0.0:
            on_batch, on_latency = self.attention, 0.0
        kv_batch = on_batch if self.kv_read > self.attn_compute else 0.0
        return {
            "weight streaming": weights,
            "KV reads": kv_batch + on_latency,
            "compute": compute + on_batch - kv_batch,
            "communication": self.comm,
            "fixed overhead": self.overhead,
        }

    @property
    def bound(self) -> str:
        """The part that takes the largest share of the pass (parts())."""
        parts = self.parts()
        return max(parts, key=lambda k: parts[k])


def _split(total: float, a: float, b: float) -> tuple[float, float]:
    """`total` (= _smooth_max(a, b)) shared between a and b by their ROOFLINE_P-th powers."""
    if total <= 0.0 or a + b <= 0.0:
        return 0.0, 0.0
    hi = max(a, b)
    wa, wb = (a / hi) ** ROOFLINE_P, (b / hi) ** ROOFLINE_P
    return total * wa / (wa + wb), total * wb / (wa + wb)


def _comm(g: Geometry, hw: HardwareSpec, shape: PoolShape, tokens: float) -> float:
    """Per-step collectives for `tokens` tokens in the replica (all attention ranks)."""
    link = group_link(hw, shape.spans_nodes, shape.tp)
    message = tokens * g.hidden * ACT_BYTES
    if shape.attention_ranks > 1:
        # gather before and scatter after the MoE (one all-reduce of volume) + in-rank TP
        per_layer = allreduce_s(message, shape.tp, link)
        per_layer += 2 * allreduce_s(message / shape.attention_ranks, shape.attention_tp, link)
    else:
        per_layer = 2 * allreduce_s(message, shape.tp, link)
    total = g.layers * per_layer
    if shape.ep > 1:
        # expert dispatch (fp8-ish, 1 byte) and combine (bf16) of each token's k copies
        per_device = tokens / shape.tp * g.experts_per_token * g.dispatch_hidden * 3.0
        total += g.moe_layers * alltoall_s(per_device, shape.ep, link)
    return total


def _smooth_max(a: float, b: float) -> float:
    """max(a, b) smoothed as a p-norm (p = ROOFLINE_P): within 19% of max, differentiable, so
    the calibration sees both sides of a roofline."""
    return float((a**ROOFLINE_P + b**ROOFLINE_P) ** (1.0 / ROOFLINE_P))


def _weights(g: Geometry, shape: PoolShape, tokens: float) -> tuple[float, float]:
    """Bytes one device reads per pass: (dense weights, routed experts the tokens touch)."""
    dense = g.attention_bytes / shape.attention_tp + (g.dense_ffn_bytes + g.lm_head_bytes) / shape.tp
    experts = g.distinct_experts(tokens) * g.expert_bytes * g.moe_layers / shape.tp
    return dense, experts


def decode_step(
    g: Geometry,
    hw: HardwareSpec,
    dt: Dtypes,
    f: Factors,
    shape: PoolShape,
    batch: float,
    mean_context: float,
    tokens_per_request: int = 1,
) -> StepTime:
    """One decode (or speculative verify) step of `batch` requests in one replica."""
    tokens = batch * tokens_per_request
    per_rank = batch / shape.attention_ranks
    rank_tokens = per_rank * tokens_per_request
    dense_w, expert_w = _weights(g, shape, tokens)
    attn_proj_flops = rank_tokens * 2.0 * g.attention_params_per_layer * g.layers / shape.attention_tp
    ffn_flops = tokens * (g.dense_flops_per_token - 2.0 * g.attention_params_per_layer * g.layers) / shape.tp
    expert_flops = tokens * g.expert_flops_per_token / shape.tp
    gemm = (attn_proj_flops + ffn_flops) / hw.peak(dt.dense) + expert_flops / hw.peak(dt.expert)
    kv_bytes = per_rank * mean_context * g.kv_bytes_per_token
    # a linear-attention layer reads and writes each request's state once per step, whatever the context
    state_bytes = per_rank * 2.0 * g.linear_state_bytes / shape.attention_tp
    score_flops = (
        rank_tokens * (mean_context * g.decode_attn_flops_per_ctx_token + g.linear_flops_per_token) / shape.attention_tp
    )
    kv_read = (kv_bytes + state_bytes) / hw.hbm_bytes_per_s / f.eta_attn
    attn_compute = score_flops / hw.peak("bf16") / f.eta_attn
    batch_bound = max(kv_read, attn_compute)
    one_request = mean_context * g.context_layers * f.attn_ns_per_token * 1e-9
    return StepTime(
        overhead=g.layers * f.overhead_us * 1e-6,
        weight_read=(dense_w / f.eta_bw + expert_w / f.eta_moe) / hw.hbm_bytes_per_s,
        gemm=gemm / f.eta_gemm,
        attention=_smooth_max(batch_bound, one_request) if batch > 0 else 0.0,
        comm=_comm(g, hw, shape, tokens),
        kv_read=kv_read if batch > 0 else 0.0,
        attn_compute=attn_compute if batch > 0 else 0.0,
        attn_latency=one_request if batch > 0 else 0.0,
    )


def prefill_chunk(
    g: Geometry, hw: HardwareSpec, dt: Dtypes, f: Factors, shape: PoolShape, new_tokens: float, context_before: float
) -> StepTime:
    """One prefill forward pass of `new_tokens` tokens of one request after `context_before`."""
    n = new_tokens
    dense_w, expert_w = _weights(g, shape, n)
    attn_proj_flops = n * 2.0 * g.attention_params_per_layer * g.layers / shape.attention_tp
    ffn_flops = n * (g.dense_flops_per_token - 2.0 * g.attention_params_per_layer * g.layers) / shape.tp
    expert_flops = n * g.expert_flops_per_token / shape.tp
    gemm = (attn_proj_flops + ffn_flops) / hw.peak(dt.dense) + expert_flops / hw.peak(dt.expert)
    pairs = n * context_before + n * n / 2.0
    score_flops = (pairs * g.prefill_attn_flops_per_pair + n * g.linear_flops_per_token) / shape.attention_tp
    attention = score_flops / hw.peak("bf16") / f.eta_prefill
    return StepTime(
        overhead=g.layers * f.overhead_us * 1e-6,
        weight_read=(dense_w + expert_w) / (hw.hbm_bytes_per_s * f.eta_bw),
        gemm=gemm / f.eta_prefill,
        attention=attention,
        comm=_comm(g, hw, shape, n),
        attn_compute=attention,
    )


def prefill_chunks(
    g: Geometry,
    hw: HardwareSpec,
    dt: Dtypes,
    f: Factors,
    shape: PoolShape,
    new_tokens: float,
    cached_tokens: float,
    chunk: int,
) -> list[StepTime]:
    """The forward passes that prefill one request alone: chunked by --chunked-prefill-size, after
    the `cached_tokens` a prefix cache already holds (they cost attention, not projections); a
    fully cached prompt still takes one decode-sized pass."""
    if new_tokens <= 0:
        return [decode_step(g, hw, dt, f, shape, 1, cached_tokens)]
    passes, done = [], 0.0
    while done < new_tokens:
        n = min(float(chunk), new_tokens - done)
        passes.append(prefill_chunk(g, hw, dt, f, shape, n, cached_tokens + done))
        done += n
    return passes
