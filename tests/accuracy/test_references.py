"""Reference comparison: Wilson intervals, joins on (suite, metric), emulated labels, the chart."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from kimi_runbooks.accuracy import EvalRow, chart, compare, reference_frame, wilson
from kimi_runbooks.accuracy.references import metric_family, reference_entry


def test_wilson_matches_the_formula_by_hand():
    p, n, z = 0.8, 50, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    lo, hi = wilson(p, n)
    assert lo == pytest.approx(centre - half) and hi == pytest.approx(centre + half)
    assert lo == pytest.approx(0.6696, abs=1e-3) and hi == pytest.approx(0.8876, abs=1e-3)
    assert wilson(0.0, 10)[0] == 0.0 and wilson(1.0, 10)[1] == pytest.approx(1.0)
    assert wilson(0.5, None) == (None, None) and wilson(None, 10) == (None, None)


def test_reference_frame_reads_params_with_kinds():
    refs = reference_frame()
    succ = refs[(refs.suite == "k2vv-toolcall") & (refs.metric == "success")].iloc[0]
    entry = reference_entry("k2vv-toolcall")["metrics"]["success"]
    assert succ["kind"] == "count" and succ["rate"] == pytest.approx(entry["value"] / entry["n"])
    acc = refs[(refs.suite == "gpqa-diamond") & (refs.metric == "accuracy")].iloc[0]
    assert acc["kind"] == "rate" and acc["rate"] == reference_entry("gpqa-diamond")["metrics"]["accuracy"]["value"]
    assert set(refs.suite) >= {"k2vv-toolcall", "aime25", "gpqa-diamond", "ocrbench", "mmmu-pro", "gsm8k"}


def test_compare_joins_exact_and_by_family_and_labels_emulated():
    rows = [
        EvalRow(suite="gpqa-diamond", metric="accuracy", value=0.5, n=40, emulated=True, source="emulated"),
        EvalRow(suite="aime25", metric="pass_at_1_avg1", value=0.0, n=2, emulated=True, source="emulated"),
        EvalRow(
            suite="toolcall-builtin",
            metric="schema_valid",
            value=6,
            n=8,
            kind="count",
            settings={"reference_suite": "k2vv-toolcall"},
        ),
        EvalRow(suite="aime25", metric="made_up_metric", value=0.3, n=3),
        EvalRow(suite="ocrbench", metric="status", status="skipped", detail="no checkout"),
    ]
    table = compare(rows)
    assert len(table) == 4  # the skipped row carries no number
    gpqa = table[table.suite == "gpqa-diamond"].iloc[0]
    ref = reference_entry("gpqa-diamond")["metrics"]["accuracy"]
    assert gpqa["source"] == "EMULATED" and gpqa["delta"] == pytest.approx(0.5 - ref["value"])
    assert (gpqa["ci_low"], gpqa["ci_high"]) == pytest.approx(wilson(0.5, 40))
    assert (gpqa["ref_ci_low"], gpqa["ref_ci_high"]) == pytest.approx(wilson(ref["value"], ref["n"]))
    aime = table[table.metric == "pass_at_1_avg1"].iloc[0]
    assert aime["ref_metric"] == "pass_at_1_avg32" and bool(aime["k_differs"]) is True
    sv = table[table.metric == "schema_valid"].iloc[0]
    k2 = reference_entry("k2vv-toolcall")["metrics"]["schema_valid"]
    assert sv["rate"] == pytest.approx(6 / 8) and sv["ref_rate"] == pytest.approx(k2["value"] / k2["n"])
    assert sv["source"] == "measured"
    assert pd.isna(table[table.metric == "made_up_metric"].iloc[0]["ref_metric"])


def test_metric_family():
    assert metric_family("pass_at_1_avg32") == metric_family("pass_at_1_avg1") == "pass_at_1_avg*"
    assert metric_family("majority_at_32") == "majority_at_*" and metric_family("accuracy") == "accuracy"


def test_chart_has_run_and_reference_bars_with_error_bars():
    table = compare(
        [EvalRow(suite="gpqa-diamond", metric="accuracy", value=0.5, n=40, emulated=True, source="emulated")]
    )
    fig = chart(table)
    assert [t.name for t in fig.data] == ["this run (EMULATED)", "published reference"]
    assert fig.data[0].error_y.array[0] == pytest.approx(wilson(0.5, 40)[1] - 0.5)
    assert "EMULATED" in fig.layout.title.text
    assert len(chart(compare([])).data) == 0
