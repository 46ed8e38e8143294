"""Each physical term of the performance model against a hand computation."""

from __future__ import annotations

import math

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.comm import allreduce_s, alltoall_s, group_link
from kimi_runbooks.perfmodel.factors import Factors
from kimi_runbooks.perfmodel.geometry import NoPerformanceModelError, geometry
from kimi_runbooks.perfmodel.hardware import dense_dtype, expert_dtype, hardware_spec
from kimi_runbooks.perfmodel.queueing import (
    Timing,
    closed_loop,
    open_loop,
    steady_decode,
    synchronized_waves,
)
from kimi_runbooks.perfmodel.step import (
    Dtypes,
    PoolShape,
    decode_step,
    prefill_chunk,
    prefill_chunks,
)

CATALOG = load_catalog()
K26 = CATALOG.model("kimi-k2.6")
H200 = CATALOG.platform("h200")
UNIT = Factors(
    overhead_us=1e-9, eta_bw=1.0, eta_moe=1.0, eta_attn=1.0, attn_ns_per_token=1e-9, eta_gemm=1.0, eta_prefill=1.0
)
BF16 = Dtypes(dense="bf16", expert="bf16")


def test_geometry_matches_every_checkpoint_size():
    for model in CATALOG.models.values():
        counts = model.architecture.parameter_counts
        if counts is not None:  # weights counted from published totals (a hybrid model)
            g = geometry(model, "bf16")
            assert g.active_params == pytest.approx(counts.active_b * 1e9, rel=1e-6), model.id
            routed = g.expert_params * g.experts * g.moe_layers + g.dense_ffn_params
            assert routed == pytest.approx(counts.total_b * 1e9, rel=0.03), model.id  # 2.78T vs "2.8T"
            # the checkpoint size is itself an estimate (params/models says it undercounts BF16 weights)
            assert g.total_bytes == pytest.approx(model.checkpoint_gb * 1e9, rel=0.06), model.id
            continue
        g = geometry(model, "bf16")
        assert g.total_bytes == pytest.approx(model.checkpoint_gb * 1e9, rel=0.02), model.id
        assert g.active_params == pytest.approx(31.5e9, rel=0.02)  # "32B activated"


def test_geometry_hand_numbers():
    g = geometry(K26, "bf16")
    # one routed expert: 3 x 7168 x 2048 parameters at 0.5 + 2/32 bytes (INT4, bf16 scale per 32)
    assert g.expert_params == 3 * 7168 * 2048
    assert g.expert_bytes == pytest.approx(3 * 7168 * 2048 * 0.5625)
    # latent KV: (512 + 64) x 61 layers x 2 bytes
    assert g.kv_bytes_per_token == 576 * 61 * 2
    assert geometry(K26, "fp8_e4m3").kv_bytes_per_token == 576 * 61
    # decode attention per context token: 2 x 64 heads x (576 + 512) x 61 layers
    assert g.decode_attn_flops_per_ctx_token == 2 * 64 * 1088 * 61
    # prefill pair: 2 x 64 x (192 + 128) x 61
    assert g.prefill_attn_flops_per_pair == 2 * 64 * 320 * 61


def test_distinct_experts_touched():
    g = geometry(K26, "bf16")
    assert g.distinct_experts(0) == 0
    assert g.distinct_experts(1) == pytest.approx(8.0)
    # 16 tokens: 384 x (1 - (1 - 8/384)^16)
    assert g.distinct_experts(16) == pytest.approx(384 * (1 - (1 - 8 / 384) ** 16))
    assert g.distinct_experts(10_000) == pytest.approx(384, rel=1e-6)


def test_decode_weight_read_by_hand():
    g, hw = geometry(K26, "bf16"), hardware_spec(H200)
    shape = PoolShape(tp=8, attention_ranks=1, ep=1, spans_nodes=False)
    step = decode_step(g, hw, BF16, UNIT, shape, batch=1, mean_context=0)
    dense = (g.attention_bytes + g.dense_ffn_bytes + g.lm_head_bytes) / 8
    experts = 8 * g.expert_bytes * 60 / 8
    assert step.weight_read == pytest.approx((dense + experts) / 4.8e12)
    # a batch of 16 touches more experts; the dense part is read once per step
    step16 = decode_step(g, hw, BF16, UNIT, shape, batch=16, mean_context=0)
    extra = (g.distinct_experts(16) - 8) * g.expert_bytes * 60 / 8 / 4.8e12
    assert step16.weight_read - step.weight_read == pytest.approx(extra)


def test_latent_kv_is_read_whole_on_each_attention_rank():
    g, hw = geometry(K26, "bf16"), hardware_spec(H200)
    f = Factors(**{**UNIT.as_dict(), "eta_attn": 1.0})
    tp = PoolShape(tp=8, attention_ranks=1, ep=1, spans_nodes=False)
    dp = PoolShape(tp=8, attention_ranks=8, ep=1, spans_nodes=False)
    # 16 requests of 8192 tokens: plain TP reads all 16 latents on every device ...
    kv_tp = 16 * 8192 * g.kv_bytes_per_token / 4.8e12
    # ... DP attention reads 2 per device
    kv_dp = 2 * 8192 * g.kv_bytes_per_token / 4.8e12
    at_tp = decode_step(g, hw, BF16, f, tp, 16, 8192).attention
    at_dp = decode_step(g, hw, BF16, f, dp, 16, 8192).attention
    assert at_tp == pytest.approx(kv_tp, rel=1e-3)
    assert at_dp == pytest.approx(kv_dp, rel=1e-3)


def test_one_request_attention_latency_term():
    g, hw = geometry(K26, "bf16"), hardware_spec(H200)
    f = Factors(**{**UNIT.as_dict(), "attn_ns_per_token": 50.0})
    shape = PoolShape(tp=8, attention_ranks=1, ep=1, spans_nodes=False)
    step = decode_step(g, hw, BF16, f, shape, 1, 4000)
    assert step.attention == pytest.approx(4000 * 61 * 50e-9, rel=0.01)


def test_collectives():
    assert allreduce_s(1e6, 1, 1e9) == 0.0
    assert allreduce_s(1e6, 8, 1e9) == pytest.approx(2 * 7 / 8 * 1e-3)
    assert alltoall_s(1e6, 4, 1e9) == pytest.approx(3 / 4 * 1e-3)
    hw = hardware_spec(CATALOG.platform("ascend-a3"))
    assert group_link(hw, False) == 196e9 and group_link(hw, True) == 25e9
    g = geometry(K26, "bf16")
    shape = PoolShape(tp=8, attention_ranks=1, ep=1, spans_nodes=False)
    step = decode_step(g, hardware_spec(H200), BF16, UNIT, shape, 4, 0)
    # two all-reduces per layer of 4 tokens x 7168 x 2 bytes over NVLink 450 GB/s
    assert step.comm == pytest.approx(61 * 2 * allreduce_s(4 * 7168 * 2, 8, 450e9))


def test_prefill_flops_quadratic_and_chunked():
    g, hw = geometry(K26, "bf16"), hardware_spec(H200)
    shape = PoolShape(tp=8, attention_ranks=1, ep=1, spans_nodes=False)
    one = prefill_chunk(g, hw, BF16, UNIT, shape, 8192, 0)
    linear = 8192 * (g.dense_flops_per_token + g.expert_flops_per_token) / 8 / 989e12
    quadratic = 8192 * 8192 / 2 * g.prefill_attn_flops_per_pair / 8 / 989e12
    assert one.gemm == pytest.approx(linear, rel=1e-6)
    assert one.attention == pytest.approx(quadratic, rel=1e-6)
    # chunks of 4096: same FLOPs, the second chunk attends to the first
    two = _prefill_s(g, hw, shape, 8192, 0, chunk=4096)
    first = prefill_chunk(g, hw, BF16, UNIT, shape, 4096, 0).total
    second = prefill_chunk(g, hw, BF16, UNIT, shape, 4096, 4096).total
    assert two == pytest.approx(first + second)
    # a prefix-cache hit skips the cached tokens' projections but not their attention
    cached = _prefill_s(g, hw, shape, 1000, 7192, chunk=8192)
    assert cached < _prefill_s(g, hw, shape, 8192, 0, chunk=8192)


def test_compute_precision_follows_the_weight_format():
    assert expert_dtype(K26, H200) == "bf16"  # W4A16
    nv = CATALOG.model("kimi-k2.6-nvfp4")
    assert expert_dtype(nv, CATALOG.platform("b300")) == "fp4"
    assert expert_dtype(CATALOG.model("kimi-k2-instruct"), H200) == "fp8"
    assert dense_dtype(CATALOG.model("kimi-k2-instruct"), H200) == "fp8"
    assert expert_dtype(CATALOG.model("kimi-k2.6-w4a8"), CATALOG.platform("ascend-a3")) == "int8"
    assert hardware_spec(CATALOG.platform("ascend-a3")).peak("fp8") == 376e12  # falls back to bf16


def _timing(prefill=0.1, per_token=lambda b: 0.01 + 0.001 * b, capacity=100, pd=False) -> Timing:
    return Timing(
        prefill=prefill, token_time=per_token, step_time=per_token, transfer=0.0, capacity=capacity, disaggregated=pd
    )


def test_closed_loop_little_and_prefill_interference():
    t = _timing()
    o = closed_loop(t, 1, 101)
    # alone: TTFT = prefill + half a step; TPOT slowed by the prefill share of the cycle
    assert o.running == pytest.approx(1.0, rel=0.05)
    assert o.ttft_s == pytest.approx(0.1 + t.step_time(1) / 2 + o.prefill_busy / (1 - o.prefill_busy) * 0.05, rel=1e-3)
    assert o.tpot_s == pytest.approx(t.token_time(o.running) / (1 - o.prefill_busy), rel=1e-3)
    e2e = o.ttft_s + 100 * o.tpot_s
    assert o.completions_per_s == pytest.approx(1 / e2e, rel=1e-3)
    # PD: the decode pool never pauses for prefill
    pd = closed_loop(_timing(pd=True), 16, 101)
    mixed = closed_loop(_timing(), 16, 101)
    assert pd.tpot_s < mixed.tpot_s


def test_kv_capacity_caps_the_batch_and_the_rest_queue():
    t = _timing(capacity=8)
    o = closed_loop(t, 32, 101)
    assert o.kv_limited and o.running <= 8
    # Little's law: 32 clients / X = E2E; waiting shows up in TTFT
    assert o.ttft_s + 100 * o.tpot_s == pytest.approx(32 / o.completions_per_s, rel=1e-3)
    assert o.ttft_s > closed_loop(_timing(capacity=100), 8, 101).ttft_s


def test_fixed_lengths_move_in_lock_step_waves():
    """Prefill first (SGLang's scheduler): a wave of C prefills runs back to back, then the C
    requests decode together. Hand computation for C = 40, prefill 1.6 s, step 0.17 s."""
    step = 0.17
    t = _timing(prefill=1.6, per_token=lambda b: step, capacity=100)
    o = closed_loop(t, 40, 512, num_prompts=160, fixed_lengths=True)
    wave_s = 40 * 1.6 + 511 * step + step / 2
    assert o.ttft_s == pytest.approx(41 / 2 * 1.6 + step / 2)  # the median request waits for 20 prefills
    assert o.tpot_s == pytest.approx(step + 39 / 2 * 1.6 / 511)  # and for the 19.5 after its own
    assert o.itl_s == step and o.running == 40
    assert o.output_tok_s == pytest.approx(40 * 512 / wave_s)
    # 40 prompts at concurrency 24: a wave of 24, then the 16 left; medians over all 40 requests
    part = closed_loop(t, 24, 512, num_prompts=40, fixed_lengths=True)
    seconds = (24 + 16) * 1.6 + 2 * (511 * step + step / 2)
    assert part.output_tok_s == pytest.approx(40 * 512 / seconds)
    ttfts = sorted([k * 1.6 + step / 2 for k in range(1, 25)] + [k * 1.6 + step / 2 for k in range(1, 17)])
    assert part.ttft_s == pytest.approx((ttfts[19] + ttfts[20]) / 2)
    # the same load with varying lengths does not wait for a whole wave
    spread = closed_loop(t, 40, 512, num_prompts=160)
    assert spread.ttft_s < o.ttft_s / 3
    # one client has no wave; PD disaggregation decodes each request as soon as it lands
    assert closed_loop(t, 1, 512, fixed_lengths=True) == closed_loop(t, 1, 512)
    assert closed_loop(_timing(pd=True), 16, 101, fixed_lengths=True) == closed_loop(_timing(pd=True), 16, 101)
    # a KV pool of 10: waves of 10; a request waits for the 3 waves of the 30 clients ahead of it
    small = synchronized_waves(_timing(prefill=1.6, per_token=lambda b: step, capacity=10), 40, 512)
    period = 10 * 1.6 + 511 * step + step / 2
    assert small.kv_limited and small.running == 10
    assert small.output_tok_s == pytest.approx(10 * 512 / period)
    assert small.ttft_s == pytest.approx(3 * period + 5.5 * 1.6 + step / 2, rel=0.01)
    assert small.ttft_s + 511 * small.tpot_s == pytest.approx(40 / small.completions_per_s, rel=0.02)  # Little
    # 40 prompts, 40 clients, a pool for 35: the 5 left over wait one wave, the median does not
    over = synchronized_waves(_timing(prefill=1.6, per_token=lambda b: step, capacity=35), 40, 512, num_prompts=40)
    assert over.ttft_s == pytest.approx(20.5 * 1.6 + step / 2)


def test_open_loop_and_saturation():
    t = _timing()
    o = open_loop(t, 0.5, 101)
    assert o.completions_per_s == 0.5 and not o.saturated
    assert open_loop(t, 20.0, 101).saturated  # 20/s x 0.1 s prefill > 1
    assert math.isinf(open_loop(t, 20.0, 101).ttft_s)


def test_steady_decode():
    o = steady_decode(_timing(capacity=4), 8)
    assert o.kv_limited and o.output_tok_s == pytest.approx(8 / (0.01 + 0.008))


def test_a_model_without_dimensions_or_parameter_counts_is_refused_with_the_fix():
    k3 = CATALOG.model("kimi-k3")
    bare = k3.model_copy(update={"architecture": k3.architecture.model_copy(update={"parameter_counts": None})})
    with pytest.raises(NoPerformanceModelError, match="parameter_counts") as err:
        geometry(bare, "bf16")
    assert "q_lora_rank" in str(err.value) and "Fix:" in str(err.value)


def _prefill_s(g, hw, shape, new_tokens, cached_tokens, chunk):  # one request alone: its passes summed
    return sum(step.total for step in prefill_chunks(g, hw, BF16, UNIT, shape, new_tokens, cached_tokens, chunk))
