"""The calibration: which published rows it uses, that its command reproduces the committed
factors, and what `python -m kimi_runbooks.perfmodel calibrate --write` writes."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.calibration import Evaluator, fit_all, pages_by_family_stack
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.perfmodel.predict import Predictor, Scenario, predict
from kimi_runbooks.perfmodel.shape_basis import UNVALIDATED_SHAPE_BAND_WIDENING
from kimi_runbooks.perfmodel.spec import format_predictions, parse_predict_spec
from kimi_runbooks.perfmodel.store import calibration_path, load_calibration
from kimi_runbooks.perfmodel.validation import LEAVE_OUT, Check, band, family_bands
from kimi_runbooks.plan.planner import plan

CATALOG = load_catalog()


def test_every_published_speed_result_is_an_observation():
    obs = observations(CATALOG)
    by_ref = {}
    for o in obs:
        by_ref.setdefault(o.reference_id, []).append(o)
    assert len({o.scenario_id for o in by_ref["cookbook-k26-h200"]}) == 8
    assert len({o.scenario_id for o in by_ref["cookbook-k2-b200"]}) == 2
    assert len({o.scenario_id for o in by_ref["cookbook-k26-mi350x"]}) == 2
    matrix = CATALOG.references["llmib-rtx-pro-6000-k26-nvfp4"].rows  # type: ignore[attr-defined]
    valid = [r for r in matrix if r["status"] == "valid"]
    assert len({o.scenario_id for o in by_ref["llmib-rtx-pro-6000-k26-nvfp4"]}) == len(valid)
    # measured lengths, not nominal ones (bench_serving's default range ratio shortens them)
    chat = next(o for o in by_ref["cookbook-k26-h200"] if o.scenario_id == "chat-1k1k-c1")
    assert (chat.scenario.input_len, chat.scenario.output_len) == (610, 422)
    # SLO targets are listed but only the tight ones fit, at half weight
    targets = by_ref["ascend-a3-targets"]
    assert all(o.kind == "targets" for o in targets)
    assert {o.fit for o in targets} == {True, False}
    assert all(o.weight == 0.5 for o in targets)


@pytest.mark.slow  # the whole calibration fit: ~17 s; make test-all and CI run it
def test_committed_calibration_is_what_the_fit_gives():
    """`calibrate --write` reproduces the committed calibration: the same parameters, the same values."""
    committed = load_calibration(CATALOG.root)
    ev = Evaluator(CATALOG, observations(CATALOG))
    fresh, _ = fit_all(ev, ev.obs)
    assert set(fresh.values) == set(committed.values)
    for name, value in fresh.values.items():
        assert value == pytest.approx(committed.values[name], rel=0.02), name
    assert fresh.fitted_stack_keys == committed.fitted_stack_keys
    assert committed.band and committed.band_calibrated  # written by the validation


def test_calibrate_command_writes_parameters_bands_and_coverage(tmp_path: Path):
    params = tmp_path / "params"
    shutil.copytree(CATALOG.root, params)
    for ref in (params / "references").glob("*.yaml"):
        if ref.name != "speed-cookbook-k26-mi350x.yaml":
            ref.unlink()
    shutil.rmtree(params / "perfmodel")
    proc = subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.perfmodel", "calibrate", "--write", "--params-dir", str(params)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "== leave one page out" in proc.stdout and "== leave one run out" in proc.stdout
    assert "degrees of freedom per family" in proc.stdout and "amd-cdna" in proc.stdout
    written = calibration_path(params)
    data = yaml.safe_load(written.read_text())
    assert written.read_text().startswith("# Performance-model calibration")
    assert data["references"] == ["cookbook-k26-mi350x"]
    assert data["measured_families"] == ["amd-cdna"]
    assert data["degrees_of_freedom"]["amd-cdna"]["runs"] == 2
    assert data["degrees_of_freedom"]["amd-cdna"]["free_parameters"] <= 2 / 3 + 1e-9
    for entry in data["parameters"].values():
        lo, hi = entry["range"]
        assert lo <= entry["value"] <= hi
    assert set(data["validation"]) == {"page_out", "time_split", "held_out", "run_out"}
    cal = load_calibration(params)
    assert cal.validated("amd-cdna", observations(load_catalog(params))[0].stack)
    assert not cal.validated("nvidia-hopper")


def test_references_from_one_page_leave_together_when_leaving_pages_out():
    obs = observations(CATALOG)
    page = {o.reference_id: o.document for o in obs}
    assert page["cookbook-k26-h200"] == page["cookbook-k26-mi350x"]  # sections 5.2 and 5.3 of one page
    assert page["cookbook-k26-h200"] == "https://docs.sglang.io/cookbook/autoregressive/Moonshotai/Kimi-K2.6"
    assert page["cookbook-k2-b200"] != page["cookbook-k26-h200"]
    assert page["llmib-rtx-pro-6000-k26-nvfp4"] == "llmib-rtx-pro-6000-k26-nvfp4"  # no address: its own id
    assert set(LEAVE_OUT) == {"reference", "page"}


def test_a_calibrated_family_gets_its_own_band_never_narrower_than_the_pool():
    cal = load_calibration(CATALOG.root)
    assert set(cal.band_by_family) <= {o.family for o in observations(CATALOG) if o.kind != "targets"}
    for fam, bands in cal.band_by_family.items():
        for metric, (lo, hi) in bands.items():
            pooled_lo, pooled_hi = cal.band_calibrated[metric]
            assert lo <= pooled_lo and hi >= pooled_hi, (fam, metric)
            assert cal.band_for(metric, "measured", fam) == (lo, hi)
    assert cal.band_for("median_tpot_ms", "measured", "no-such-family") == cal.band_calibrated["median_tpot_ms"]
    assert cal.band_for("median_tpot_ms", "borrowed", "amd-cdna") == cal.band["median_tpot_ms"]  # page-out
    lo, hi = cal.band["median_tpot_ms"]
    assert cal.band_for("median_tpot_ms", "unfitted-stack") == pytest.approx((1.5 * lo, 1.5 * hi))


def test_family_bands_widen_to_the_pool():
    obs = [o for o in observations(CATALOG) if o.kind == "speed" and o.metric == "median_tpot_ms"][:4]
    fam_a = [dataclasses.replace(o, family="a") for o in obs[:1]]
    fam_b = [dataclasses.replace(o, family="b") for o in obs[1:]]
    checks = [Check(o, o.published * 2.0, "run-out") for o in fam_a]  # a: always 2x too slow
    checks += [Check(o, o.published * 1.01, "run-out") for o in fam_b]  # b: about right
    bands = family_bands(checks)
    assert bands["a"]["median_tpot_ms"][1] == pytest.approx(math.log(2.0))
    assert band(checks)["median_tpot_ms"][1] < math.log(2.0) - 0.1  # wider than the pool's
    assert bands["b"]["median_tpot_ms"][1] == pytest.approx(band(checks)["median_tpot_ms"][1])  # the pool's


def test_a_family_fitted_only_to_slo_ceilings_is_not_called_validated():
    """Ascend's factors come from published SLO targets, never a measurement: predictions use
    them but carry a new family's band and say why, instead of a calibrated family's."""
    cal = load_calibration(CATALOG.root)
    measured = {o.family for o in observations(CATALOG) if o.kind != "targets"}
    assert set(cal.targets_only) == {"huawei-ascend"} and "huawei-ascend" not in measured
    ascend = next(o.stack for o in observations(CATALOG) if o.family == "huawei-ascend")
    hopper = next(o.stack for o in observations(CATALOG) if o.family == "nvidia-hopper")
    assert not cal.validated("huawei-ascend", ascend)
    assert cal.basis("huawei-ascend", ascend) == "slo-targets-only"
    assert cal.basis("nvidia-hopper", hopper) == "measured"

    launch = plan({"platform": "ascend-a3"}, CATALOG)
    (p,) = predict(launch, parse_predict_spec("in=3500,out=1500,c=16"), cal)
    assert (p.calibrated_family, p.calibration_basis) == (False, "slo-targets-only")
    assert (p.pages, p.band_basis) == (0, "first principles")  # no measurement stands behind it
    lo, hi = cal.band_by_support["first principles"]["median_tpot_ms"]  # the widest tier's page-out band
    # the default Ascend plan spans two nodes and only SLO ceilings check that shape: widened again
    assert "Nothing measured validates this shape" in p.shape_basis
    lo, hi = lo * UNVALIDATED_SHAPE_BAND_WIDENING, hi * UNVALIDATED_SHAPE_BAND_WIDENING
    assert p.low["median_tpot_ms"] == pytest.approx(min(p.median_tpot_ms, p.median_tpot_ms * math.exp(-hi)))
    assert p.high["median_tpot_ms"] == pytest.approx(max(p.median_tpot_ms, p.median_tpot_ms * math.exp(-lo)))
    assert "fitted only to published SLO ceilings" in format_predictions([p])
    assert p.as_dict()["calibration_basis"] == "slo-targets-only"


def test_a_prediction_says_how_many_pages_stand_behind_its_band():
    cal = load_calibration(CATALOG.root)
    # pages per family and stack: the fitted measured rows' distinct pages
    obs = [o for o in observations(CATALOG) if o.fit and o.kind != "targets"]
    assert cal.pages_by_family_stack == pages_by_family_stack(obs)
    assert cal.pages_by_family_stack["amd-cdna flydsl:W4A16:tuned"] == 2  # the ROCm MI300X and W4A8 blogs
    h200 = Predictor(plan({"platform": "h200", "model": "kimi-k2.6"}, CATALOG), cal)
    one = h200.predict(Scenario(1000, 1000, concurrency=16))
    assert (one.pages, one.band_basis) == (1, "one page")
    # the same plan with a second page behind it takes the narrower tier's band, and says so
    lo, hi = cal.band_by_support["first principles"]["median_tpot_ms"]
    narrow = {m: (lo / 4, hi / 4) for m in cal.band_by_support["pages"]}
    two_pages = dataclasses.replace(
        cal,
        pages_by_family_stack={**cal.pages_by_family_stack, "nvidia-hopper default:W4A16": 2},
        band_by_support={**cal.band_by_support, "pages": narrow},
    )
    two = Predictor(h200.plan, two_pages).predict(Scenario(1000, 1000, concurrency=16))
    assert (two.pages, two.band_basis) == (2, "2 pages, same stack")
    tpot = "median_tpot_ms"
    assert two.high[tpot] / two.low[tpot] < one.high[tpot] / one.low[tpot]
    text = format_predictions([two])
    assert "band basis: 2 pages, same stack" in text and "reference-from-run" not in text
    k3 = plan({"platform": "b300", "model": "kimi-k3"}, CATALOG)
    p = Predictor(k3, cal).predict(Scenario(8192, 1024, concurrency=16))
    assert (p.pages, p.band_basis, p.calibration_basis) == (0, "first principles", "first-principles")
