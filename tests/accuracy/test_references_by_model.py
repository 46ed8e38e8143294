"""Accuracy references are chosen by the served model: its own parameter set and figures when
params/references has them (the Kimi Vendor Verifier's Kimi-K3 set), else the references that apply to
any model; a `model_only` set never stands in for another model."""

from __future__ import annotations

import pytest

from kimi_runbooks.accuracy.common import EvalRow
from kimi_runbooks.accuracy.references import compare, model_id, reference_entry, reference_frame
from kimi_runbooks.catalog import load_catalog


def test_the_k3_parameter_set_is_a_loaded_reference() -> None:
    ref = load_catalog().references["accuracy-kvv-k3"]
    assert ref.kind == "accuracy" and ref.model == "kimi-k3" and ref.platform == "any"
    assert "Kimi-Vendor-Verifier" in ref.source


@pytest.mark.parametrize("served", ["moonshotai/Kimi-K3", "kimi-k3"])
def test_a_k3_server_gets_the_k3_entries(served: str) -> None:
    assert model_id(served) == "kimi-k3"
    for suite in ("ocrbench", "mmmu-pro"):
        entry = reference_entry(suite, model=served)
        assert entry["reference_id"] == "accuracy-kvv-k3" and "--thinking-effort max" in entry["command"]
    # no K3 figure for aime25: the references that apply to any model
    assert reference_entry("aime25", model=served)["reference_id"] == "accuracy-cookbook-k26-h200"


@pytest.mark.parametrize("served", [None, "moonshotai/Kimi-K2.6", "nvidia/Kimi-K2.6-NVFP4", "someone/else"])
def test_other_models_never_get_the_model_only_k3_set(served: str | None) -> None:
    for suite in ("ocrbench", "mmmu-pro"):
        assert reference_entry(suite, model=served)["reference_id"] == "accuracy-cookbook-k26-h200"


def _row(model: str, value: float) -> EvalRow:
    return EvalRow(
        suite="ocrbench",
        metric="accuracy",
        value=value,
        n=1000,
        kind="rate",
        settings={"reference_suite": "ocrbench", "model": model},
        tool="kvv",
        emulated=False,
        source="measured",
    )


def test_compare_joins_each_run_to_its_models_figure() -> None:
    refs = reference_frame()
    k3 = compare([_row("moonshotai/Kimi-K3", 0.88)], refs).iloc[0]
    assert k3["reference_id"] == "accuracy-kvv-k3" and k3["ref_value"] == pytest.approx(0.89)
    k26 = compare([_row("moonshotai/Kimi-K2.6", 0.88)], refs).iloc[0]
    assert k26["reference_id"] == "accuracy-cookbook-k26-h200" and k26["ref_value"] == pytest.approx(0.908)
