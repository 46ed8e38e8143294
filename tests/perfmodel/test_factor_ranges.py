"""Issue 26 item 1: every fitted efficiency stays inside its documented range, in the committed
calibration and in any fit (bounded least squares); no family fits more than its runs / 3."""

from __future__ import annotations

import dataclasses
import math

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.calibration import DOF_RUNS_PER_PARAMETER, Evaluator, fit, free_parameters
from kimi_runbooks.perfmodel.factors import (
    RANGES,
    borrowed_from,
    compose,
    kind_of,
    out_of_range,
    pooled,
    term_keys,
)
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.perfmodel.stack import Stack
from kimi_runbooks.perfmodel.store import load_calibration

CATALOG = load_catalog()


def test_every_committed_parameter_is_inside_its_documented_range() -> None:
    cal = load_calibration(CATALOG.root)
    assert cal.values, "the committed calibration fits parameters"
    assert out_of_range(cal.values) == []
    for name in cal.values:
        assert kind_of(name) in RANGES, name


def test_every_range_says_why_and_hardware_ranges_cite_a_public_page() -> None:
    for kind, r in RANGES.items():
        assert 0 < r.lo < r.prior < r.hi, kind
        assert len(r.why) > 40, kind
        if kind.startswith("hw."):
            assert r.source.startswith("https://"), kind
    assert (RANGES["hw.stream"].lo, RANGES["hw.stream"].hi) == (0.5, 0.95)
    assert (RANGES["hw.mma"].lo, RANGES["hw.mma"].hi) == (0.2, 0.9)


def test_out_of_range_names_the_offender() -> None:
    assert out_of_range({"hw.stream[hbm]": 0.04}) == ["hw.stream[hbm]=0.04 outside [0.5, 0.95]"]
    assert out_of_range({"hw.mma": 0.2, "stack.overhead_us[graphs]": 400.0}) == []


def test_a_fit_to_absurdly_slow_results_stays_inside_the_ranges() -> None:
    """Results 30x slower than any hardware explains: the fit pins efficiencies at their bounds
    instead of leaving them (the old fit returned AMD dense streaming at 4% of peak)."""
    rows = [o for o in observations(CATALOG) if o.reference_id == "cookbook-k26-mi350x"]
    slow = [
        dataclasses.replace(o, published=o.published * (30.0 if o.metric != "output_throughput" else 1 / 30.0))
        for o in rows
    ]
    ev = Evaluator(CATALOG, slow)
    names = ["hw.stream[hbm]", "hw.mma", "stack.overhead_us[graphs]"]
    values = fit(ev, slow, names)
    assert set(values) == set(names)
    assert out_of_range(values) == []
    assert values["hw.stream[hbm]"] == pytest.approx(RANGES["hw.stream"].lo, rel=1e-3)


def test_no_family_fits_more_parameters_than_its_runs_over_three() -> None:
    obs = observations(CATALOG)
    budget = free_parameters(Evaluator(CATALOG, obs), obs)
    assert budget.free and budget.fixed  # some terms fitted, some held at their priors
    for fam, n in budget.runs.items():
        assert budget.dof[fam] <= n / DOF_RUNS_PER_PARAMETER + 1e-9, fam
    # parameters are shared where the physics is: one GEMM efficiency for every family
    assert set(budget.families_of["hw.mma"]) == set(budget.runs)
    assert not any(RANGES[kind_of(n)].fitted is False for n in budget.free)  # hw.link stays fixed


def test_an_unfitted_expert_kernel_term_borrows_the_fitted_paths_of_its_weight_format() -> None:
    fitted = {
        "stack.moe_kernel[flashinfer_cutlass:FP4]": 0.9,
        "stack.moe_kernel[cutlass:FP4]": 0.4,
        "stack.moe_kernel[default:W4]": 0.05,
        "hw.stream[hbm]": 0.8,
    }
    # the geometric mean of the two FP4 paths; W4 and the hardware term take no part
    assert pooled(fitted, "stack.moe_kernel[default:FP4]") == pytest.approx(0.6)
    assert pooled(fitted, "stack.moe_kernel[flydsl:W4]") == pytest.approx(0.05)
    # a tuned kernel never borrows a release path's inefficiency (issue 43 item 3): its prior
    assert pooled(fitted, "stack.moe_kernel[flydsl:W4:tuned]") == RANGES["stack.moe_kernel"].prior
    assert pooled({**fitted, "stack.moe_kernel[aiter:W4:tuned]": 0.7}, "stack.moe_kernel[flydsl:W4:tuned]") == 0.7
    # no fitted path of the format, a term of another kind, or a term not keyed by a MoE path: the prior
    assert pooled(fitted, "stack.moe_kernel[deepep:W8]") == RANGES["stack.moe_kernel"].prior
    assert pooled(fitted, "stack.small_batch_gemm[default:FP4]") == RANGES["stack.small_batch_gemm"].prior
    assert pooled(fitted, "stack.attn_latency_ns[amd:aiter]") == RANGES["stack.attn_latency_ns"].prior
    # compose uses it for what the fit left out, never over a fitted value
    keys = term_keys("nvidia-blackwell", Stack(moe_path=None, precision="FP4"))
    assert keys.moe == "stack.moe_kernel[default:FP4]"
    assert compose(fitted, keys).eta_moe == pytest.approx(0.8 * 0.6)
    assert compose({**fitted, keys.moe: 0.2}, keys).eta_moe == pytest.approx(0.8 * 0.2)


def test_only_a_term_measured_rows_read_lends() -> None:
    """An expert-kernel term fitted only to Ascend's SLO ceilings (deepep:W4) lends nothing: an
    AMD W4 FlyDSL run without a fit of its own stays at the prior instead of borrowing a ceiling."""
    fitted = {"stack.moe_kernel[deepep:W4]": 0.78, "stack.moe_kernel[default:FP4]": 0.5}
    ceiling_only = {"stack.moe_kernel[default:FP4]"}  # what measured rows read: not the W4 term
    term = "stack.moe_kernel[flydsl:W4]"
    assert pooled(fitted, term) == pytest.approx(0.78)  # no lenders named: every fitted term lends
    assert pooled(fitted, term, ceiling_only) == RANGES["stack.moe_kernel"].prior
    assert borrowed_from(fitted, term, ceiling_only) == []


def test_the_committed_calibration_borrows_from_measured_terms_only() -> None:
    cal = load_calibration(CATALOG.root)
    assert cal.lenders is not None, "calibration.yaml names the terms measured rows read"
    ceiling_only = set(cal.values) - set(cal.lenders)
    assert "stack.moe_kernel[deepep:W4]" in ceiling_only  # fitted to Ascend's SLO ceilings alone
    # what a prediction reads: an untuned FlyDSL W4A8 stack on AMD borrows the measured stock W4 path
    # only, not the ceiling fit (Calibration.factors hands its lenders to compose)
    w4a8 = Stack(moe_path="flydsl", precision="W4A8")
    keys = term_keys("amd-cdna", w4a8)
    assert keys.moe == "stack.moe_kernel[flydsl:W4]" and keys.moe not in cal.values
    stream, stock = cal.values[keys.stream], cal.values["stack.moe_kernel[default:W4]"]
    assert cal.factors("amd-cdna", w4a8).eta_moe == pytest.approx(stream * stock)
    both = math.sqrt(stock * cal.values["stack.moe_kernel[deepep:W4]"])
    assert compose(cal.values, keys).eta_moe == pytest.approx(stream * both)  # without lenders: the ceiling too
