"""Repeated scenarios in the report: mean ± 95% interval and N in the speed table, the mean (and N)
in the comparison with published references, and noise / real change / no interval across runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from kimi_runbooks import report
from kimi_runbooks.report import compare_runs, sections
from kimi_runbooks.report import tables as report_tables
from kimi_runbooks.report.verdict import warnings
from kimi_runbooks.rundir import RunFolder

SCENARIO = "chat-1k1k-c1"  # an h200 reference: 106.1 output tok/s, TTFT 154 ms, TPOT 9.32 ms (cookbook)


def _folder(path: Path, ttfts: list[float], throughput: float = 20.0) -> Path:
    """A run folder with only a speed stage: one row per repeat (a measured run, not emulated)."""
    path.mkdir(parents=True)
    n = len(ttfts)
    rows = [
        {
            "scenario": SCENARIO,
            "status": "ok",
            "emulated": False,
            "platform": "h200",
            "devices": 8,
            "max_concurrency": 1,
            "repeat": k,
            "repeats": n,
            "metrics": {"median_ttft_ms": t, "median_tpot_ms": 9.0 + k / 10, "output_throughput": throughput + k},
        }
        for k, t in enumerate(ttfts, 1)
    ]
    (path / RunFolder.BENCH).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (path / RunFolder.RUNBOOK).write_text(json.dumps({"platform": "h200", "stages": ["speed"], "run_id": path.name}))
    return path


def test_speed_table_shows_mean_plus_minus_interval_and_n(tmp_path):
    data = report.collect(RunFolder.of(_folder(tmp_path / "r3", [100.0, 110.0, 120.0])))
    row = data.speed.iloc[0]
    assert row["n_runs"] == 3 and row["median_ttft_ms"] == 110.0
    html = sections.speed_section(data)
    half = 4.302653 * 10 / math.sqrt(3)  # t(0.975, 2) x sd 10 / sqrt 3 = 24.8
    assert "N (runs)" in html and "TTFT p50 (ms) mean ± 95%" in html
    assert f'110 <span class="note">± {half:.3g}</span>' in html
    assert "Student t" in html
    plain_table = report_tables.speed_table(data)
    assert plain_table is not None and {"n_runs", "median_ttft_ms_ci_low", "median_ttft_ms_ci_high"} <= set(plain_table)
    assert plain_table.iloc[0]["median_ttft_ms_ci_high"] == pytest.approx(110 + half)
    single = report.collect(RunFolder.of(_folder(tmp_path / "r1", [100.0])))
    assert "n_runs" not in report_tables.speed_table(single)
    plain = sections.speed_section(single)
    assert "±" not in plain and "N (runs)" not in plain  # one run, no repeats asked: the table as before


def test_comparison_with_references_uses_the_mean_and_says_n(tmp_path):
    data = report.collect(RunFolder.of(_folder(tmp_path / "slow", [300.0, 310.0, 320.0], throughput=20.0)))
    comparison = report.speed_comparison(data)
    ttft = comparison[comparison["metric"] == "median_ttft_ms"].iloc[0]
    assert ttft["run_value"] == 310.0 and ttft["run_n"] == 3 and "mean of 3 runs" in ttft["note"]
    texts = [w.text for w in warnings(data) if w.kind == "regression"]
    assert any(f"{SCENARIO} median_ttft_ms: measured 310 (mean of 3 runs) vs reference" in t for t in texts), texts


def _rows(*runs: tuple[int, list[float]]) -> pd.DataFrame:
    """Collapsed rows (as load_results gives them) of the same scenario from several runs."""
    from kimi_runbooks.speed.repeats import collapse

    out = []
    for index, (_, ttfts) in enumerate(runs):
        recs = [
            {"scenario": "s", "status": "ok", "repeat": k, "repeats": len(ttfts), "median_ttft_ms": t}
            for k, t in enumerate(ttfts, 1)
        ]
        [row] = collapse(recs)
        out.append(row | {"run_index": index, "origin": f"run {index}"})
    return pd.DataFrame.from_records(out)


def test_cross_run_deltas_are_noise_real_change_or_no_interval():
    noise = compare_runs.scenario_sections(_rows((0, [100.0, 104.0, 96.0]), (1, [102.0, 106.0, 98.0])), [])
    assert "+2.0% noise" in noise and "real change" not in noise.split("</p>", 1)[1]
    real = compare_runs.scenario_sections(_rows((0, [100.0, 101.0, 99.0]), (1, [150.0, 151.0, 149.0])), [])
    assert '<span class="bad"' in real and "+50.0% real change" in real  # TTFT up: worse, and not noise
    single = compare_runs.scenario_sections(_rows((0, [100.0]), (1, [150.0, 151.0, 149.0])), [])
    assert "+50.0% no interval (single run)" in single and "the first is a single run" in single
    assert "N (runs)" in single and "± " in single  # the repeated run's interval is still shown


def test_compare_page_from_two_repeated_run_folders(tmp_path):
    a = _folder(tmp_path / "a", [100.0, 102.0, 98.0])
    b = _folder(tmp_path / "b", [140.0, 142.0, 138.0])
    text = compare_runs.build([RunFolder(a), RunFolder(b)], tmp_path / "cmp.html").read_text()
    assert "+40.0% real change" in text and "Welch" in text
