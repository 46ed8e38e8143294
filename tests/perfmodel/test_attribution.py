"""What bounds a prediction (issue 26 item 5): shares of the model's own terms."""

from __future__ import annotations

import math

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.attribution import CATEGORIES, AttributionError, attribution, with_remainder
from kimi_runbooks.perfmodel.factors import Factors
from kimi_runbooks.perfmodel.geometry import geometry
from kimi_runbooks.perfmodel.hardware import hardware_spec
from kimi_runbooks.perfmodel.predict import Predictor, Scenario
from kimi_runbooks.perfmodel.spec import format_predictions
from kimi_runbooks.perfmodel.step import Dtypes, PoolShape, decode_step, prefill_chunk
from kimi_runbooks.plan import PlanConfig, plan

CATALOG = load_catalog()
K2 = CATALOG.model("kimi-k2-instruct")
H200 = hardware_spec(CATALOG.platform("h200"))
FP8 = Dtypes(dense="fp8", expert="fp8")
TP8 = PoolShape(tp=8, attention_ranks=1, ep=1, spans_nodes=False)
PHYSICAL = Factors(
    overhead_us=5.0, eta_bw=0.8, eta_moe=0.6, eta_attn=0.9, attn_ns_per_token=0.01, eta_gemm=0.5, eta_prefill=0.5
)
"""Efficiencies inside datasheet-plausible ranges (not the fitted ones: the test is about the physics)."""

PLANS = {
    "h200 tp8": {"platform": "h200"},
    "rtx tp8": {"platform": "rtx-pro-6000"},
    "rtx tp8 pp2 2 nodes": {"platform": "rtx-pro-6000", "model": "kimi-k2.6", "tp": 8, "pp": 2, "nnodes": 2},
    "b200 speculative": {"platform": "b200", "speculative": True},
    "ascend 1p1d": {"platform": "ascend-a3", "deployment": "ascend-a3-1p1d-16p-in64k-out1k5"},
}
SCENARIOS = [
    Scenario(1000, 1000, concurrency=1),
    Scenario(4000, 500, concurrency=64),
    Scenario(1000, 1000, concurrency=512),
    Scenario(8000, 1000, concurrency=8, fixed_lengths=True),
    Scenario(2000, 200, request_rate=0.5),
    Scenario(30000, 2000, concurrency=4, steady_decode=True),
]


def _plan(config):
    extra = {"node_ips": ["10.0.0.1"]} if config.get("nnodes") else {}
    return plan(PlanConfig(**config, **extra))


@pytest.mark.parametrize("name", sorted(PLANS))
def test_shares_sum_to_one_and_add_up_to_the_prediction(name):
    pr = Predictor(_plan(PLANS[name]))
    for s in SCENARIOS:
        p = pr.predict(s)
        for why, value in ((p.tpot_why, p.median_tpot_ms), (p.ttft_why, p.median_ttft_ms)):
            if not math.isfinite(value):
                continue
            assert why is not None and why.shares, (name, s)
            assert set(why.shares) == set(CATEGORIES)
            assert sum(why.shares.values()) == pytest.approx(1.0, abs=1e-9)
            assert min(why.shares.values()) >= 0.0
            assert why.seconds * 1000 == pytest.approx(value, rel=1e-6), (name, s, why.metric)
        assert p.bound == p.tpot_why.bound


def test_step_parts_add_up_to_the_step():
    g = geometry(K2, "fp8_e4m3")
    for batch, ctx in ((1, 100), (8, 4000), (256, 60000), (1024, 1000)):
        step = decode_step(g, H200, FP8, PHYSICAL, TP8, batch, ctx)
        assert sum(step.parts().values()) == pytest.approx(step.total, rel=1e-12)
    chunk = prefill_chunk(g, H200, FP8, PHYSICAL, TP8, 8192, 16000)
    assert sum(chunk.parts().values()) == pytest.approx(chunk.total, rel=1e-12)
    assert chunk.bound == "compute"  # an 8k-token chunk is far past the ridge


def test_batch_one_decode_is_weight_streaming_bound_and_load_moves_it_to_kv_and_compute():
    g = geometry(K2, "fp8_e4m3")
    one = attribution("TPOT", decode_step(g, H200, FP8, PHYSICAL, TP8, 1, 1000).parts())
    assert one.bound == "weight streaming"
    assert one.share("weight streaming") > 0.5
    busy = attribution("TPOT", decode_step(g, H200, FP8, PHYSICAL, TP8, 256, 60000).parts())
    assert busy.bound in ("KV reads", "compute")
    assert busy.share("weight streaming") < one.share("weight streaming")
    assert busy.share("KV reads") + busy.share("compute") > one.share("KV reads") + one.share("compute")
    long_one = attribution("TPOT", decode_step(g, H200, FP8, PHYSICAL, TP8, 1, 120000).parts())
    assert long_one.share("KV reads") > one.share("KV reads")  # context alone moves it toward KV reads


def test_iteration_parts_are_what_the_queueing_model_uses():
    for name in ("h200 tp8", "b200 speculative", "rtx tp8 pp2 2 nodes"):
        pr = Predictor(_plan(PLANS[name]))
        pool = pr.serving.decode_pool
        for batch in (1.0, 7.5, 64.0):
            parts = pr.iteration_parts(pool, batch, 3000)
            assert sum(parts.values()) == pytest.approx(pr.iteration_seconds(pool, batch, 3000), rel=1e-12), name


def test_mixed_pool_stalls_decode_for_prefill_pd_does_not():
    mixed = Predictor(_plan(PLANS["h200 tp8"])).predict(Scenario(8000, 500, concurrency=32))
    assert mixed.tpot_why.share("prefill stalls") > 0.05
    pd = Predictor(_plan(PLANS["ascend 1p1d"])).predict(Scenario(3500, 1500, concurrency=4))
    assert pd.tpot_why.share("prefill stalls") == pytest.approx(0.0, abs=1e-6)
    assert pd.ttft_why.share("communication") > 0.0  # the KV transfer between the pools


def test_a_full_kv_pool_shows_as_queueing_in_ttft():
    p = Predictor(_plan(PLANS["h200 tp8"])).predict(Scenario(1000, 1000, concurrency=4096))
    assert p.kv_limited
    assert p.ttft_why.bound == "queueing"


def test_the_table_prints_what_bounds_each_prediction():
    pr = Predictor(_plan(PLANS["h200 tp8"]))
    text = format_predictions([pr.predict(SCENARIOS[0]), pr.predict(SCENARIOS[1])])
    assert "## what bounds it" in text
    assert "in=1000 out=1000 c=1: TPOT: " in text and "; TTFT: " in text


def test_bad_parts_are_refused():
    with pytest.raises(AttributionError, match="unknown terms"):
        attribution("TPOT", {"memory": 1.0})
    with pytest.raises(AttributionError, match=">= 0"):
        attribution("TPOT", {"compute": -1.0})
    assert attribution("TPOT", {}).shares == {}


def test_what_the_model_waits_for_is_the_remainder():
    why = with_remainder("TTFT", {"compute": 1.0, "communication": 1.0}, 4.0, "queueing")
    assert why.share("queueing") == pytest.approx(0.5)
    assert why.seconds == pytest.approx(4.0)
    scaled = with_remainder("TTFT", {"compute": 3.0, "communication": 1.0}, 2.0, "queueing")
    assert scaled.share("queueing") == 0.0 and scaled.share("compute") == pytest.approx(0.75)
    assert scaled.seconds == pytest.approx(2.0)


def test_the_command_generator_view_says_what_bounds_it():
    from kimi_runbooks.generator import predicted_text

    text = predicted_text({"platform": "h200"}, "in=1000,out=1000,c=1")
    assert "## what bounds it" in text and "in=1000 out=1000 c=1: TPOT: " in text
