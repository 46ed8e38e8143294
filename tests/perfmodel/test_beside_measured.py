"""Measured beside predicted, per scenario: the band, the out-of-band flag, and every way a
prediction can be missing ("no prediction: <reason>", never an error)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel import Predictor, Scenario, beside_measured, plan_of_run, predicted_beside_measured
from kimi_runbooks.perfmodel.beside_measured import EMULATED_NOTE, PREDICTION_SOURCE
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.saved import plan_record
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed import predicted_vs_measured

CATALOG = load_catalog()
METRICS = ("median_ttft_ms", "median_tpot_ms", "output_throughput")


@pytest.fixture(scope="module")
def launch():
    return plan({"platform": "h200"}, CATALOG)


def _row(scenario: str, c: int, p, scale: dict[str, float] | None = None) -> dict:
    """A bench_serving row of 20 requests of 1000 in / 500 out whose metrics are the prediction x scale."""
    scale = scale or {}
    return {
        "scenario": scenario,
        "status": "ok",
        "completed": 20,
        "total_input_tokens": 20 * 1000,
        "total_output_tokens": 20 * 500,
        "max_concurrency": c,
        **{m: getattr(p, m) * scale.get(m, 1.0) for m in METRICS},
    }


def test_in_band_is_not_flagged_and_out_of_band_names_the_metric(launch):
    predictor = Predictor(launch)
    p = predictor.predict(Scenario(1000, 500, concurrency=4, num_prompts=20))
    rows = pd.DataFrame(
        [
            _row("as-predicted", 4, p),
            _row("slow-decode", 4, p, {"median_tpot_ms": 6.0}),
            _row("fast", 4, p, {"output_throughput": 5.0, "median_ttft_ms": 0.1}),
            {"scenario": "broken", "status": "failed"},
        ]
    )
    table = predicted_beside_measured(rows, launch, predictor=predictor).set_index("scenario")
    assert list(table.index) == ["as-predicted", "slow-decode", "fast"]  # only ok scenarios
    ok = table.loc["as-predicted"]
    for m in METRICS:
        assert ok[f"predicted_{m}"] == pytest.approx(getattr(p, m))
        assert ok[f"predicted_{m}_low"] <= ok[m] <= ok[f"predicted_{m}_high"]
    assert ok["outside_band"] == ""
    assert ok["prediction"].startswith("predicted (model estimate") and PREDICTION_SOURCE in ok["prediction"]
    assert table.loc["slow-decode", "outside_band"] == "median_tpot_ms"
    assert table.loc["fast", "outside_band"] == "median_ttft_ms, output_throughput"


def test_missing_plan_or_lengths_or_a_failing_model_says_no_prediction(launch):
    rows = pd.DataFrame([{"scenario": "a", "status": "ok", "median_tpot_ms": 20.0, "max_concurrency": 1}])
    external = predicted_beside_measured(rows, None, reason="external server: no plan")
    assert external.loc[0, "prediction"] == "no prediction: external server: no plan"
    assert external.loc[0, "median_tpot_ms"] == 20.0 and math.isnan(external.loc[0, "predicted_median_tpot_ms"])
    no_lengths = predicted_beside_measured(rows, launch)
    assert no_lengths.loc[0, "prediction"].startswith("no prediction: the result has no input/output lengths")

    class Broken(Predictor):
        def predict(self, scenario: Scenario):
            raise ValueError("no hardware numbers for this platform")

    full = pd.DataFrame([{**rows.loc[0].to_dict(), "input_len": 1000, "output_len": 100}])
    broken = predicted_beside_measured(full, launch, predictor=Broken(launch))
    assert broken.loc[0, "prediction"] == "no prediction: ValueError: no hardware numbers for this platform"


def test_emulated_runs_say_agreement_is_by_construction(launch):
    p = Predictor(launch).predict(Scenario(1000, 500, concurrency=1, num_prompts=20))
    table = predicted_beside_measured(pd.DataFrame([_row("x", 1, p)]), launch, emulated=True)
    assert EMULATED_NOTE in table.loc[0, "prediction"] and "by construction" in EMULATED_NOTE


def test_plan_of_run_rebuilds_the_recorded_plan_or_says_why_not(launch):
    rebuilt, why = plan_of_run(json.loads(json.dumps(launch.as_dict())))
    assert why is None and rebuilt is not None and rebuilt.command == launch.command
    assert plan_of_run(launch.as_dict(), external=True) == (
        None,
        "external server: no plan of this project describes it",
    )
    assert plan_of_run(None) == (None, "no plan recorded in this run folder")
    bad = {"config": {"platform": "no-such-platform"}}
    assert plan_of_run(bad)[1].startswith("the recorded plan cannot be rebuilt")


def test_plan_of_run_reads_a_saved_plan_as_saved(launch, monkeypatch):
    """The report does not plan again: a plan saved whole (plan/saved.py) is loaded, argv and all."""
    record = json.loads(json.dumps(plan_record(launch)))
    record["saved"]["plan"]["argv"].append("--as-saved")
    monkeypatch.setattr(beside_measured, "make_plan", lambda *a, **k: pytest.fail("planned again"))
    loaded, why = plan_of_run(record)
    assert why is None and loaded is not None and loaded.argv[-1] == "--as-saved"


def test_the_speed_stage_reads_the_run_folder_plan_and_rescales_an_emulated_run(tmp_path, launch):
    p = Predictor(launch).predict(Scenario(1000, 500, concurrency=2, num_prompts=20))
    row = _row("x", 2, p)
    scale = 0.05  # the emulator slept 20x shorter: latencies x 0.05, throughput x 20
    fast = {**row, "emulated": True, "label": "emulated", "output_throughput": row["output_throughput"] / scale}
    fast.update(median_ttft_ms=row["median_ttft_ms"] * scale, median_tpot_ms=row["median_tpot_ms"] * scale)
    (tmp_path / "plan.json").write_text(json.dumps(launch.as_dict()))
    (tmp_path / "handle.json").write_text(json.dumps({"launcher": "emulator", "emulated": True, "time_scale": scale}))
    table = predicted_vs_measured(pd.DataFrame([fast]), RunFolder(tmp_path))
    assert table.loc[0, "outside_band"] == "" and table.loc[0, "median_tpot_ms"] == pytest.approx(p.median_tpot_ms)
    assert "by construction" in table.loc[0, "prediction"]
    (tmp_path / "handle.json").write_text(json.dumps({"launcher": "external"}))
    external = predicted_vs_measured(pd.DataFrame([row]), RunFolder(tmp_path))
    assert external.loc[0, "prediction"].startswith("no prediction: external server")


def test_measured_beside_predicted_says_what_bounds_the_prediction(launch):
    from kimi_runbooks.perfmodel.spec import why_text
    from kimi_runbooks.report.sections import PREDICTED_COLUMNS

    predictor = Predictor(launch)
    p = predictor.predict(Scenario(1000, 500, concurrency=4, num_prompts=20))
    table = predicted_beside_measured(pd.DataFrame([_row("a", 4, p)]), launch, predictor=predictor)
    assert table.loc[0, "bound"] == why_text(p)
    assert table.loc[0, "bound"].startswith(f"TPOT: {p.tpot_why.bound} ")
    assert "bound" in [c.key for c in PREDICTED_COLUMNS]  # the report's measured-beside-predicted table
    missing = predicted_beside_measured(pd.DataFrame([_row("a", 4, p)]), None, reason="no plan")
    assert missing.loc[0, "bound"] == ""
