"""Every current Kimi-K3 cookbook cell is predicted (issue 43, item 5): unified and PD-role cells,
DSPARK on and off, on every platform params/ has; each prediction finite, positive, inside its own
band, naming its basis, its accept length's source and, for a lone PD role, what it leaves out."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.cli import main
from kimi_runbooks.cookbook.kept_files import load_generated
from kimi_runbooks.paths import PARAMS_DIR
from kimi_runbooks.perfmodel import parse_predict_spec
from kimi_runbooks.perfmodel.cookbook_cells import CellPrediction, format_cells_table, predict_cells
from kimi_runbooks.perfmodel.store import support_text

K3_CELLS = "f795573d68a06b095c2605328c8fd000e05eda4b"  # the newest kept K3 page (tests/cookbook/conftest.K3_NEW)
METRICS = ("median_ttft_ms", "median_tpot_ms", "output_throughput")


@pytest.fixture(scope="module")
def predicted() -> list[CellPrediction]:
    return predict_cells("kimi-k3", parse_predict_spec("in=1000,out=1000,c=16"))


def test_every_generated_k3_cell_on_every_params_platform_is_predicted(predicted):
    platforms = set(load_catalog().platforms)
    generated = [c for c in load_generated(PARAMS_DIR, "kimi-k3", K3_CELLS)["cells"] if c["hardware"] in platforms]
    key = ("hardware", "role", "strategy", "speculative")
    want = Counter(tuple(c.get(k) or "unified" if k == "role" else c.get(k) for k in key) for c in generated)
    got = Counter((r.cell.hardware, r.cell.role, r.cell.strategy, r.cell.speculative) for r in predicted)
    assert got == want
    assert {r.cell.hardware for r in predicted} == {
        "h100",
        "h200",
        "b200",
        "b300",
        "gb200",
        "gb300",
        "mi350x",
        "mi355x",
    }
    assert {r.cell.role for r in predicted} == {"unified", "prefill", "decode"}
    assert {r.cell.speculative for r in predicted} == {"none", "dspark"}


def test_each_prediction_is_finite_positive_inside_its_band_and_names_its_basis(predicted):
    for row in predicted:
        assert row.predictions, f"{row.label}: not predicted"
        for p in row.predictions:
            for name in METRICS:
                value, low, high = getattr(p, name), p.low[name], p.high[name]
                assert math.isfinite(value) and value > 0, (row.label, name, value)
                assert 0 < low <= value <= high < math.inf, (row.label, name, low, value, high)
            assert p.band_basis == support_text(p.pages), (row.label, p.band_basis)
            assert (p.accept_length is not None) is (row.cell.speculative == "dspark"), row.label
            assert bool(p.accept_basis) is (row.cell.speculative == "dspark"), row.label
            assert bool(p.role_note) is (row.cell.role != "unified"), row.label


def test_the_table_has_one_line_per_cell_with_its_band_and_basis(predicted):
    lines = format_cells_table(predicted).splitlines()[1:]
    assert len(lines) == len(predicted)
    assert all("[" in line and "first principles" in line for line in lines)
    assert sum("accept 2.5 assumed" in line for line in lines) == sum(r.cell.speculative == "dspark" for r in predicted)


@pytest.mark.parametrize(
    ("options", "expected", "absent"),
    [
        (
            ["--platform", "mi355x", "--strategy", "balanced"],
            ["# band basis: first principles", "accept length 2.5: ASSUMED", "speed-bunya-k3-mi355x.yaml"],
            ["predicted ALONE"],
        ),
        (
            ["--platform", "h100", "--strategy", "balanced", "--no-speculative"],
            ["# band basis: first principles"],
            ["accept length", "predicted ALONE"],
        ),
        (
            ["--platform", "gb300", "--pd-role", "prefill", "--strategy", "default"],
            ["PD role prefill predicted ALONE", "only its TTFT speaks for the role"],
            [],
        ),
        (
            ["--platform", "b200", "--pd-role", "decode", "--strategy", "balanced", "--no-speculative"],
            ["PD role decode predicted ALONE", "KV transfer are left out"],
            ["accept length"],
        ),
    ],
)
def test_plan_predict_says_the_basis_accept_source_and_role_plainly(capsys, options, expected, absent):
    code = main(["plan", "--model", "kimi-k3", *options, "--predict", "in=1000,out=1000,c=1"])
    out = capsys.readouterr().out
    assert code == 0
    table = out.split("## predicted speed", 1)[1]
    for text in expected:
        assert text in table
    for text in absent:
        assert text not in table
