"""References as rows, direction-aware regression flags, and the figures' labelling."""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
import pytest

from kimi_runbooks import speed


@pytest.fixture(scope="module")
def refs():
    return speed.reference_frame()


def test_reference_frame_covers_every_reference(refs):
    assert set(refs["reference_id"]) == {
        "cookbook-k26-h200",
        "cookbook-k26-mi350x",
        "cookbook-k2-b200",
        "llmib-rtx-pro-6000-k26-nvfp4",
        "ascend-a3-targets",
        "cookbook-k3-gb300",  # a compare-only table; fitted tables are compared in the perfmodel's validation
        "sglang-pr37878-k3-b300",  # compare-only too (Kimi-K3 on B300)
        "bunya-k3-mi355x",  # Kimi-K3 on MI355X: never fitted, validates the K3 path out of sample
        "sglang-issue32548-k3-mi355x",
    }
    assert (refs["label"] == "reference").all() and refs["source"].notna().all()
    k3 = refs[refs["reference_id"] == "cookbook-k3-gb300"].iloc[0]
    assert k3["devices"] == 8 and k3["total_tok_s_per_gpu"] == pytest.approx(856.9)  # 2 nodes x 4 GB300
    h200 = refs[(refs["reference_id"] == "cookbook-k26-h200") & (refs["scenario"] == "chat-1k1k-c1")].iloc[0]
    assert h200["devices"] == 8
    assert h200["output_tok_s_per_gpu"] == pytest.approx(106.10 / 8)
    assert h200["tok_s_per_user"] == pytest.approx(1000 / 9.32)
    mi = refs[refs["reference_id"] == "cookbook-k26-mi350x"].iloc[0]
    assert mi["devices"] == 4
    matrix = refs[refs["reference_kind"] == "matrix"]
    assert len(matrix) == 40 and (matrix["status"] == "over-capacity").sum() == 24
    cell = matrix[matrix["scenario"] == "matrix-ctx8k-c16"].iloc[0]
    assert cell["output_throughput"] == 487.4 and cell["tok_s_per_user"] == 31.0
    target = refs[refs["scenario"] == "ascend-a3-8p-in3k5-out1k5-20ms"].iloc[0]
    assert target["median_tpot_ms"] == 20 and target["reference_kind"] == "targets"
    assert set(speed.reference_frame("mi350x")["platform"]) == {"mi350x"}


def _run(**metrics) -> pd.DataFrame:
    row = {"scenario": "chat-1k1k-c1", "status": "ok", "label": "measured", "devices": 8, **metrics}
    return speed.add_derived(pd.DataFrame([row]))


def test_regressions_are_direction_aware(refs):
    h200 = refs[refs["platform"] == "h200"]
    run = _run(
        output_throughput=106.10 * 0.85, median_ttft_ms=154.24 * 0.5, median_tpot_ms=9.32 * 1.05, p99_itl_ms=14.17 * 1.2
    )
    cmp = speed.compare(run, h200, tolerance=0.1).set_index("metric")
    assert cmp.loc["output_throughput", "ratio"] == pytest.approx(0.85)
    assert cmp.loc["output_throughput", "regression"]  # 15% less throughput: worse
    assert not cmp.loc["median_ttft_ms", "regression"]  # half the latency: better
    assert not cmp.loc["median_tpot_ms", "regression"]  # 5% slower, inside 10%
    assert cmp.loc["p99_itl_ms", "regression"]  # 20% slower: worse
    assert not cmp.loc["tok_s_per_user", "regression"]
    assert cmp.loc["output_throughput", "reference_label"].startswith("reference: SGLang cookbook")
    assert (cmp["run_label"] == "measured").all()
    loose = speed.compare(run, h200, tolerance=0.2).set_index("metric")
    assert not loose.loc["output_throughput", "regression"] and not loose.loc["p99_itl_ms", "regression"]
    with pytest.raises(ValueError, match="Fix"):
        speed.compare(run, h200, tolerance=1.5)
    wide = speed.compare_wide(cmp.reset_index())
    assert "output_throughput ratio" in wide.columns and bool(wide.loc[0, "regression"])


def test_emulated_runs_are_labelled_and_failed_rows_ignored(refs):
    run = _run(output_throughput=1.0)
    run["label"] = "emulated"
    failed = _run(output_throughput=1.0).assign(status="failed", scenario="chat-1k1k-c16")
    cmp = speed.compare(pd.concat([run, failed]), refs[refs["platform"] == "h200"])
    assert set(cmp["scenario"]) == {"chat-1k1k-c1"}
    assert (cmp["run_label"] == "emulated").all() and cmp["note"].str.contains("emulated").all()
    assert speed.compare(run.iloc[0:0], refs).empty


def test_pareto_front():
    pts = pd.DataFrame({"x": [1, 2, 3, 2.5], "y": [10, 8, 2, 1]})
    front = speed.pareto_front(pts, "x", "y")
    assert list(front["x"]) == [1, 2, 3]


def test_figures_label_origin(refs):
    run = _run(
        output_throughput=50.0,
        median_ttft_ms=100.0,
        p99_ttft_ms=200.0,
        median_tpot_ms=10.0,
        p99_tpot_ms=20.0,
        max_concurrency=1,
    )
    run["label"] = "emulated"
    h200 = refs[refs["platform"] == "h200"]
    for fig in (
        speed.throughput_vs_concurrency(run, h200),
        speed.latency_vs_concurrency(run, h200),
        speed.pareto(run, refs),
    ):
        assert isinstance(fig, go.Figure)
        names = [t.name for t in fig.data if t.name]
        assert any("emulated" in n for n in names), names
        assert any("reference: SGLang cookbook" in n for n in names), names
    pareto = speed.pareto(run, refs)
    platforms = {n.split(" — ")[0] for n in (t.name for t in pareto.data) if n}
    assert "this run — emulated" in [t.name for t in pareto.data]
    assert {"h200", "mi350x", "b200", "rtx-pro-6000", "this run"} <= platforms


def test_heatmap_marks_over_capacity(refs):
    matrix = refs[refs["reference_kind"] == "matrix"]
    fig = speed.heatmap(matrix)
    texts = [t for trace in fig.data if trace.text is not None for row in trace.text for t in row]
    assert texts.count("over capacity") >= 24 and "487.4" in texts
    assert "over KV capacity" in fig.layout.title.text and "reference" in fig.layout.title.text
    run = pd.DataFrame(
        [
            {
                "scenario": "matrix-ctx8k-c1",
                "status": "ok",
                "max_concurrency": 1,
                "output_throughput": 40.0,
                "label": "emulated",
            },
            {"scenario": "matrix-ctx64k-c8", "status": "over-capacity", "max_concurrency": 8, "label": "emulated"},
        ]
    )
    fig2 = speed.heatmap(run)
    grid = fig2.data[1]
    assert list(grid.y) == ["8K", "64K"] and "emulated" in fig2.layout.title.text
    assert fig2.data[0].z[1][1] == 1 and math.isclose(grid.z[0][0], 40.0)


def test_a_run_of_the_k3_scenario_compares_with_the_published_k3_figure():
    refs = speed.reference_frame("gb300")
    run = pd.DataFrame(
        [{"scenario": "k3-8k1k-c32", "status": "ok", "label": "measured", "devices": 8, "total_throughput": 6000.0}]
    )
    run = speed.results.add_derived(run)
    out = speed.compare(run, refs, metrics=["total_tok_s_per_gpu"])
    row = out.iloc[0]
    assert row["reference_id"] == "cookbook-k3-gb300" and row["reference_value"] == pytest.approx(856.9)
    assert row["ratio"] == pytest.approx(750.0 / 856.9) and bool(row["regression"])
