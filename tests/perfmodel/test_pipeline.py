"""Pipeline parallelism and PD pools from their own physics (issue 26 item 6)."""

from __future__ import annotations

import dataclasses
import math

import pytest

from kimi_runbooks.catalog import Reference, load_catalog
from kimi_runbooks.perfmodel import shape_basis as shape_basis_module
from kimi_runbooks.perfmodel.pipeline import Stages, boundary_s
from kimi_runbooks.perfmodel.predict import Predictor, Scenario
from kimi_runbooks.perfmodel.queueing import Timing, closed_loop
from kimi_runbooks.plan import PlanConfig, plan

CATALOG = load_catalog()
PP2 = {"platform": "rtx-pro-6000", "model": "kimi-k2.6", "tp": 8, "pp": 2, "nnodes": 2, "node_ips": ["10.0.0.1"]}
TP8 = {"platform": "rtx-pro-6000", "model": "kimi-k2.6", "tp": 8}
PD = {"platform": "ascend-a3", "deployment": "ascend-a3-1p1d-16p-in64k-out1k5"}


def _pr(config) -> Predictor:
    return Predictor(plan(PlanConfig(**config)))


def test_a_stage_keeps_its_tp_group_inside_its_node():
    pool = _pr(PP2).serving.decode_pool
    assert pool.pp == 2 and pool.devices == 16
    assert not pool.spans_nodes  # tp 8 all-reduces stay on the node's PCIe
    assert pool.stage_crosses_nodes  # only the stage boundary crosses the NIC
    tp16 = _pr({"platform": "rtx-pro-6000", "model": "kimi-k2.6", "tp": 16, "nnodes": 2, "node_ips": ["10.0.0.1"]})
    assert tp16.serving.decode_pool.spans_nodes


def test_a_stage_holds_the_kv_of_its_own_layers():
    one, two = plan(PlanConfig(**TP8)).memory, plan(PlanConfig(**PP2)).memory
    # weights halve per device, and the KV per token of a stage is 31 of 61 layers
    assert two.kv_budget_gib > one.kv_budget_gib
    per_token_stage = two.kv_bytes_per_token * 31 / 61
    assert two.kv_pool_tokens == int(two.kv_budget_gib * 2**30 // per_token_stage)
    assert one.kv_pool_tokens == int(one.kv_budget_gib * 2**30 // one.kv_bytes_per_token)


def test_batch_one_pays_the_boundary_and_idles_half_the_stages():
    pp, tp = _pr(PP2), _pr(TP8)
    pool_pp, pool_tp = pp.serving.decode_pool, tp.serving.decode_pool
    cycle = pp.iteration_seconds(pool_pp, 1, 2000)
    single = tp.iteration_seconds(pool_tp, 1, 2000)
    shape = pp.shape(pool_pp)
    transfer = boundary_s(1, pool_pp.geometry.hidden, pp.hw, shape)
    assert transfer > 0
    # the same tp 8 pass over all layers, once, plus one boundary: no speed-up at batch 1
    assert cycle == pytest.approx(single + transfer, rel=1e-9)
    parts = pp.iteration_parts(pool_pp, 1, 2000)
    assert parts["pipeline bubbles"] == pytest.approx(single / 2, rel=1e-9)  # one of two stages idle


def test_a_full_pipeline_idles_only_for_its_uneven_stages():
    pp = _pr(PP2)
    pool = pp.serving.decode_pool
    parts = pp.iteration_parts(pool, 64, 2000)
    stages = Stages(2, pool.geometry.layers)
    assert stages.depth_ratio == pytest.approx(62 / 61)
    worked = sum(v for k, v in parts.items() if k not in ("pipeline bubbles",)) - (
        boundary_s(32, pool.geometry.hidden, pp.hw, pp.shape(pool))
    )
    assert parts["pipeline bubbles"] == pytest.approx(worked * (62 / 61 - 1), rel=1e-6)


def test_stages_serve_more_than_one_node_at_load():
    load = Scenario(1000, 1000, concurrency=256)
    assert _pr(PP2).predict(load).output_throughput > 1.3 * _pr(TP8).predict(load).output_throughput


def test_a_slower_network_slows_the_pipeline():
    fast = _pr(PP2)
    slow = _pr(PP2)
    slow.hw = dataclasses.replace(slow.hw, inter_node_bytes_per_s=slow.hw.inter_node_bytes_per_s / 50)
    pool = fast.serving.decode_pool
    assert slow.iteration_seconds(pool, 64, 2000) > fast.iteration_seconds(pool, 64, 2000)
    # inside one node (pp 2 on one machine) the boundary runs over the device link
    shape = dataclasses.replace(fast.shape(pool), stage_crosses_nodes=False)
    assert boundary_s(32, 7168, fast.hw, shape) < boundary_s(32, 7168, fast.hw, fast.shape(pool))


def test_chunked_prefill_pipelines_a_long_prompt_but_not_a_short_one():
    pp, tp = _pr(PP2), _pr(TP8)
    long_pp = pp.prefill_seconds(pp.serving.prefill_pool, 65536)
    long_tp = tp.prefill_seconds(tp.serving.prefill_pool, 65536)
    assert long_pp < 0.75 * long_tp  # 8 chunks of 8192 over 2 stages
    short_pp = pp.prefill_seconds(pp.serving.prefill_pool, 2000)
    short_tp = tp.prefill_seconds(tp.serving.prefill_pool, 2000)
    assert short_pp >= short_tp  # one chunk cannot pipeline; it pays the boundary
    parts, busy = pp.prefill_parts(pp.serving.prefill_pool, 65536)
    assert busy < sum(parts.values())  # the pool is busy with the deepest stage's share only


def test_the_prefill_pool_limits_a_pd_closed_loop():
    t = Timing(
        prefill=1.0,
        token_time=lambda b: 0.01,
        step_time=lambda b: 0.01,
        transfer=0.05,
        capacity=1000,
        disaggregated=True,
    )
    o = closed_loop(t, 200, 100)
    assert o.completions_per_s == pytest.approx(1.0)  # one prefill lane of 1 s
    assert o.ttft_s == pytest.approx(200 / 1.0 - 99 * o.tpot_s, rel=1e-6)  # the rest queue for prefill


def test_pd_ttft_carries_the_kv_transfer_at_the_nic():
    pr = _pr(PD)
    s = Scenario(65536, 1500, concurrency=1)
    t = pr.timing(s)
    kv = 65536 * pr.serving.decode_pool.geometry.kv_bytes_per_token
    assert t.transfer == pytest.approx(kv / pr.hw.inter_node_bytes_per_s)
    p = pr.predict(s)
    assert p.ttft_why.share("communication") * p.median_ttft_ms / 1000 >= t.transfer * (1 - 1e-9)


def test_what_validates_the_shape_is_said():
    pp = _pr(PP2).predict(Scenario(1000, 1000, concurrency=512))
    assert "nothing published validates this shape" in pp.shape_basis
    assert "tp 8 x pp 2 on 2 nodes" in pp.shape_basis and "GB/s per device between nodes" in pp.shape_basis
    pd = _pr(PD).predict(Scenario(65536, 1500, concurrency=8))
    assert "only published SLO ceilings, never a measurement" in pd.shape_basis
    assert "ascend-a3-targets" in pd.shape_basis and "TPOT <= 100 ms" in pd.shape_basis
    assert _pr(TP8).predict(Scenario(1000, 1000, concurrency=1)).shape_basis == ""


def test_a_shape_nothing_measured_validates_gets_a_wider_band():
    """The band of a 2-node pp plan is the same band a single-node plan of its family and stack would
    show, widened in log space by UNVALIDATED_SHAPE_BAND_WIDENING, and the text says so."""
    pr = _pr(PP2)
    p = pr.predict(Scenario(1000, 1000, concurrency=512))
    widen = shape_basis_module.UNVALIDATED_SHAPE_BAND_WIDENING
    assert widen > 1 and f"band widened x{widen:g}" in p.shape_basis
    lo_err, hi_err = pr.calibration.support_band("median_tpot_ms", p.pages, p.calibration_basis) or (0, 0)
    value = p.median_tpot_ms
    assert p.high["median_tpot_ms"] == pytest.approx(max(value * math.exp(-lo_err * widen), value))
    assert p.low["median_tpot_ms"] == pytest.approx(min(value * math.exp(-hi_err * widen), value))
    single = _pr(TP8).predict(Scenario(1000, 1000, concurrency=512))
    assert single.shape_basis == "" and "band widened" not in single.shape_basis
    lo1, hi1 = pr.calibration.support_band("median_tpot_ms", single.pages, single.calibration_basis) or (0, 0)
    assert single.high["median_tpot_ms"] == pytest.approx(
        max(single.median_tpot_ms * math.exp(-lo1), single.median_tpot_ms)
    )


def test_a_published_run_of_the_same_shape_is_named(monkeypatch):
    ref = Reference(
        id="two-node-pp-run",
        kind="speed",
        platform="rtx-pro-6000",
        model="kimi-k2.6",
        source="https://example.org/two-node-run",
        launch={"tp": 8, "pp": 2, "nnodes": 2},
    )
    catalog = CATALOG.model_copy(update={"references": {**CATALOG.references, ref.id: ref}})
    monkeypatch.setattr(shape_basis_module, "load_catalog", lambda: catalog)
    text = _pr(PP2).predict(Scenario(1000, 1000, concurrency=64)).shape_basis
    assert "validated by two-node-pp-run (never fitted, compared only; https://example.org/two-node-run)" in text


def test_the_two_node_plan_prints_its_basis_and_bounds(capsys):
    from kimi_runbooks.cli import main

    code = main(
        ["plan", "--platform", "rtx-pro-6000", "--model", "kimi-k2.6", "--tp", "8", "--pp", "2", "--nnodes", "2"]
        + ["--node-ip", "10.0.0.1", "--predict", "in=1000,out=1000,c=1,512"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "nothing published validates this shape" in out
    assert "## what bounds it" in out and "pipeline bubbles" in out
    assert not math.isnan(float(out.split("c=512")[1].split()[0].replace(",", "")))


def test_a_pipelined_run_without_a_node_count_still_names_itself_single_node_runs_do_not(monkeypatch):
    runs = {
        "pp-run": Reference(
            id="pp-run", kind="speed", platform="rtx-pro-6000", model="kimi-k2.6", source="s1", stack={"pp": 2}
        ),
        "tp-run": Reference(id="tp-run", kind="speed", platform="rtx-pro-6000", model="kimi-k2.6", source="s2"),
    }
    catalog = CATALOG.model_copy(update={"references": {**CATALOG.references, **runs}})
    monkeypatch.setattr(shape_basis_module, "load_catalog", lambda: catalog)
    text = _pr(PP2).predict(Scenario(1000, 1000, concurrency=64)).shape_basis
    assert "validated by pp-run" in text and "tp-run" not in text
    tp16 = {"platform": "rtx-pro-6000", "model": "kimi-k2.6", "tp": 16, "nnodes": 2, "node_ips": ["10.0.0.1"]}
    text16 = _pr(tp16).predict(Scenario(1000, 1000, concurrency=64)).shape_basis
    assert "nothing published validates this shape" in text16 and "tp collectives across nodes" in text16


def test_the_report_label_carries_the_shape_basis():
    import pandas as pd

    from kimi_runbooks.perfmodel import predicted_beside_measured

    launch = plan(PlanConfig(**PP2))
    row = {"scenario": "a", "status": "ok", "input_len": 1000, "output_len": 500, "max_concurrency": 8}
    table = predicted_beside_measured(pd.DataFrame([{**row, "median_tpot_ms": 50.0}]), launch)
    assert "nothing published validates this shape" in table.loc[0, "prediction"]


def test_an_nvlink_domain_across_trays_keeps_collectives_on_nvlink():
    from kimi_runbooks.perfmodel.comm import group_link
    from kimi_runbooks.perfmodel.hardware import hardware_spec

    gb300 = hardware_spec(CATALOG.platform("gb300"))
    assert gb300.scale_up_devices == 72
    assert group_link(gb300, True, 8) == gb300.link_bytes_per_s  # 2 trays x 4 GPUs: NVLink (MNNVL)
    assert group_link(gb300, True, 144) == gb300.inter_node_bytes_per_s  # beyond the rack: the NIC
    h200 = hardware_spec(CATALOG.platform("h200"))
    assert h200.scale_up_devices == 0 and group_link(h200, True, 8) == h200.inter_node_bytes_per_s


def test_a_scale_up_domain_needs_a_source():
    from pydantic import ValidationError

    from kimi_runbooks.catalog import Hardware

    hw = CATALOG.platform("h200").hardware.model_dump()
    with pytest.raises(ValidationError, match="scale_up_devices has no source"):
        Hardware(**{**hw, "scale_up_devices": 16})
