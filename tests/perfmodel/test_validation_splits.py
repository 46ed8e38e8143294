"""Issue 26 item 3: the time split fits only on older pages; held-out references are never fitted and
are reported apart; the committed validation records median |error| beside coverage."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.calibration import Evaluator, fit_all
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.perfmodel.store import load_calibration
from kimi_runbooks.perfmodel.validation import held_out, leave_one_document_out, time_split

CATALOG = load_catalog()


def test_the_time_split_predicts_newer_pages_from_older_ones_only() -> None:
    obs = [o for o in observations(CATALOG) if o.reference_id in ("deplodock-k25-nvfp4-b200", "rocm-blog-k25-mi300x")]
    dates = {o.reference_id: o.published_on for o in obs}
    assert dates == {"deplodock-k25-nvfp4-b200": "2026-03-13", "rocm-blog-k25-mi300x": "2026-03-24"}
    checks = time_split(Evaluator(CATALOG, obs))
    assert checks and {c.obs.reference_id for c in checks} == {"rocm-blog-k25-mi300x"}  # the oldest has no past
    assert {c.method for c in checks} == {"time-split"}
    # fitted on deplodock's B200 rows only: the MI300X blog's stack terms were never fitted then
    assert {c.basis for c in checks} == {"unfitted-stack"}


def test_a_held_out_reference_is_never_fitted_and_reported_apart(tmp_path: Path) -> None:
    params = tmp_path / "params"
    shutil.copytree(CATALOG.root, params)
    for ref in (params / "references").glob("*.yaml"):
        if ref.name not in ("speed-cookbook-k26-mi350x.yaml", "speed-rocm-blog-k25-mi300x.yaml"):
            ref.unlink()
    path = params / "references" / "speed-rocm-blog-k25-mi300x.yaml"
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "held_out": True}))
    catalog = load_catalog(params)
    ev = Evaluator(catalog, observations(catalog))
    cal, budget = fit_all(ev, ev.obs)
    assert cal.references == ("cookbook-k26-mi350x",)  # never fitted
    assert budget.runs == {"amd-cdna": 2}
    apart = held_out(ev, cal)
    assert apart and {c.obs.reference_id for c in apart} == {"rocm-blog-k25-mi300x"}
    assert all(c.method == "held-out" for c in apart)
    assert all(c.obs.reference_id != "rocm-blog-k25-mi300x" for c in leave_one_document_out(ev))


def test_the_committed_validation_has_coverage_beside_error_per_family_and_stack() -> None:
    data = yaml.safe_load((CATALOG.root / "perfmodel" / "calibration.yaml").read_text())
    page = data["validation"]["page_out"]
    assert set(page["median_abs_error"]) >= {"median_tpot_ms", "output_throughput"}
    groups = page["coverage"]
    assert (
        "all" in groups and any(g.startswith("family ") for g in groups) and any(g.startswith("stack ") for g in groups)
    )
    for row in groups.values():
        assert row["pages"] >= 1  # "single source" when 1: judged against no limit
        for metric in ("median_tpot_ms", "output_throughput"):
            cell = row.get(metric)
            if cell is None:
                continue
            assert set(cell) == {"inside", "rows", "coverage", "sharpness", "median_abs_error"}
            assert 0 <= cell["inside"] <= cell["rows"] and cell["sharpness"] >= 1.0
    assert set(data["validation"]) == {"page_out", "time_split", "held_out", "run_out"}
    assert data["degrees_of_freedom"] and load_calibration(CATALOG.root).family_stacks
