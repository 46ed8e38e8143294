"""Repeats (speed/repeats.py): Student t quantiles against the published table, intervals, Welch's
difference, which repeats a resumed stage still runs, and one row per scenario from its repeats."""

from __future__ import annotations

import json
import math

import pytest

from kimi_runbooks.catalog import Scenario
from kimi_runbooks.speed import SpeedOptions, load_results
from kimi_runbooks.speed.repeats import (
    NO_INTERVAL,
    RepeatsError,
    collapse,
    difference,
    interval,
    pending,
    repeat_key,
    repeat_summary,
    repeats_for,
    run_repeats,
    t_cdf,
    t_quantile,
)
from kimi_runbooks.speed.results import FINISHED
from kimi_runbooks.speed.timescale import rescale

# Two-sided 95% (the 0.975 quantile) and 99% (0.995) critical values of Student's t, as printed in
# every statistics table (e.g. NIST/SEMATECH e-Handbook of Statistical Methods, section 1.3.6.7.2).
T_975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 9: 2.262, 10: 2.228, 20: 2.086, 30: 2.042, 100: 1.984}
T_995 = {1: 63.657, 4: 4.604, 10: 3.169}


@pytest.mark.parametrize(("df", "value"), sorted(T_975.items()))
def test_t_quantile_matches_the_published_table_at_95(df, value):
    assert t_quantile(0.975, df) == pytest.approx(value, abs=6e-4)


@pytest.mark.parametrize(("df", "value"), sorted(T_995.items()))
def test_t_quantile_matches_the_published_table_at_99(df, value):
    assert t_quantile(0.995, df) == pytest.approx(value, abs=6e-4)


def test_t_distribution_symmetry_limits_and_fractional_df():
    assert t_cdf(0.0, 3.7) == pytest.approx(0.5)
    assert t_quantile(0.025, 4) == pytest.approx(-t_quantile(0.975, 4))
    assert t_quantile(0.975, 1e6) == pytest.approx(1.95996, abs=1e-4)  # the normal limit
    q = t_quantile(0.975, 2.5)  # Welch's degrees of freedom are fractional
    assert t_quantile(0.975, 3) < q < t_quantile(0.975, 2)
    assert t_cdf(q, 2.5) == pytest.approx(0.975, abs=1e-9)
    with pytest.raises(ValueError, match="0 < p < 1"):
        t_quantile(1.0, 3)


def test_interval_of_three_runs_and_none_for_one():
    iv = interval([10.0, 12.0, 14.0])
    assert iv is not None and (iv.n, iv.mean, iv.sd) == (3, 12.0, 2.0)
    half = 4.302653 * 2.0 / math.sqrt(3)  # t(0.975, 2) * sd / sqrt(n)
    assert (iv.low, iv.high) == (pytest.approx(12.0 - half), pytest.approx(12.0 + half))
    assert "Student t, 2 degrees of freedom" in iv.note
    one = interval([7.0, math.nan, None, "x"])  # only finite numbers count
    assert one is not None and one.n == 1 and one.mean == 7.0
    assert one.low is None and one.high is None and one.half_width is None  # never a zero-width interval
    assert one.note == NO_INTERVAL
    assert interval([]) is None


def test_difference_uses_welch_and_says_when_there_is_no_interval():
    real = difference((2.0, 1.0, 3), (5.0, 1.0, 3))  # [1,2,3] vs [4,5,6]: 4 df, t 2.776
    assert real.verdict == "real change" and real.low == pytest.approx(3 - 2.7764 * math.sqrt(2 / 3), abs=1e-3)
    noise = difference((2.0, 1.0, 3), (3.0, 1.0, 3))  # [1,2,3] vs [2,3,4]
    assert noise.verdict == "noise" and noise.low < 0 < noise.high
    # unequal variances: the Welch-Satterthwaite degrees of freedom, not na + nb - 2
    uneq = difference((10.0, 0.1, 5), (10.5, 2.0, 5))
    assert uneq.verdict == "noise"  # 0.5 apart, but the second run's spread is wide
    single = difference((2.0, None, 1), (5.0, 1.0, 3))
    assert single.verdict == "no interval" and single.low is None and "single run" in single.reason


def test_repeats_settings_are_checked():
    assert repeats_for(None, None) == 1 and repeats_for(None, 3) == 3 and repeats_for(2, 5) == 2
    assert SpeedOptions(repeats=3).repeats == 3
    for bad in (0, -1, 2.5, True, 101):
        with pytest.raises(RepeatsError, match="repeats must be a whole number"):
            SpeedOptions(repeats=bad)
    with pytest.raises(ValueError, match="repeats"):
        Scenario(id="x", dataset="random", num_prompts=1, repeats=0)
    assert repeat_key("chat-c1", 1, 1) == "chat-c1" and repeat_key("chat-c1", 2, 3) == "chat-c1.r2"


def _row(sid: str, k: int | None, n: int | None, status: str = "ok", **metrics: float) -> dict:
    row = {"scenario": sid, "status": status, "emulated": True, "metrics": metrics}
    return row | ({"repeat": k} if k else {}) | ({"repeats": n} if n else {})


def test_pending_resumes_at_the_next_missing_repeat():
    rows = [_row("a", 1, 3), _row("a", 2, 3, "failed"), _row("b", 1, 2, "over-capacity"), _row("c", None, None)]
    left = pending({"a": 3, "b": 2, "c": 3, "d": 2}, rows, FINISHED)
    assert left == {"a": [2, 3], "b": [], "c": [2, 3], "d": [1, 2]}  # c: a row from before repeats is repeat 1
    assert pending({"a": 3}, [*rows, _row("a", 2, 3), _row("a", 3, 3)], FINISHED) == {"a": []}


def test_run_repeats_stops_at_the_first_repeat_that_is_not_ok():
    seen: list[int] = []

    def once(k: int) -> dict:
        seen.append(k)
        return {"status": "failed" if k == 3 else "ok", "repeat": k}

    assert run_repeats([2, 3, 4], once)["repeat"] == 3 and seen == [2, 3]


def test_collapse_gives_the_mean_and_interval_of_the_main_metrics():
    records = [
        {"scenario": "a", "status": "ok", "repeat": k, "repeats": 3, "max_concurrency": 4, "completed": 8}
        | {"median_ttft_ms": ttft, "median_tpot_ms": 20.0, "output_throughput": 100.0 + k, "p99_ttft_ms": 2 * ttft}
        for k, ttft in ((1, 10.0), (2, 12.0), (3, 14.0))
    ]
    [row] = collapse(records)
    assert row["n_runs"] == 3 and row["repeats"] == 3 and row["max_concurrency"] == 4  # equal values kept as ints
    assert row["median_ttft_ms"] == 12.0 and row["p99_ttft_ms"] == 24.0  # every differing metric is a mean
    half = 4.302653 * 2.0 / math.sqrt(3)
    assert row["median_ttft_ms_ci_low"] == pytest.approx(12 - half)
    assert row["median_ttft_ms_ci_high"] == pytest.approx(12 + half)
    assert row["median_ttft_ms_sd"] == 2.0 and row["median_ttft_ms_n"] == 3
    assert row["median_tpot_ms_ci_low"] == row["median_tpot_ms_ci_high"] == 20.0  # three equal runs: no spread
    assert "goodput_tok_s_ci_low" not in row  # no SLO, no goodput: no interval invented
    with_slo = [r | {"goodput_tok_s": g} for r, g in zip(records, (50.0, 60.0, 70.0))]
    [good] = collapse(with_slo)
    assert good["goodput_tok_s"] == 60.0 and good["goodput_tok_s_ci_high"] == pytest.approx(60 + 5 * half)
    assert "Student t" in row["interval_note"]


def test_collapse_of_one_run_failed_and_unfinished_repeats():
    [single] = collapse([{"scenario": "s", "status": "ok", "median_ttft_ms": 5.0}])
    assert single["n_runs"] == 1 and single["interval_note"] == NO_INTERVAL and "median_ttft_ms_ci_low" not in single
    failed = collapse(
        [
            {"scenario": "f", "status": "ok", "repeat": 1, "repeats": 3, "median_ttft_ms": 5.0},
            {"scenario": "f", "status": "failed", "repeat": 2, "repeats": 3, "error": "boom"},
        ]
    )[0]
    assert failed["status"] == "failed" and failed["error"] == "repeat 2 of 3: boom" and failed["n_runs"] == 1
    part = collapse([{"scenario": "p", "status": "ok", "repeat": k, "repeats": 3, "median_ttft_ms": k} for k in (1, 2)])
    assert part[0]["status"] == "ok" and part[0]["n_runs"] == 2
    assert part[0]["interval_note"].startswith("2 of 3 repeats ran (a rerun resumes the rest)")
    # a later run of the scenario asking for one repeat: the older repeats 2 and 3 are not mixed in
    old = [{"scenario": "o", "status": "ok", "repeat": k, "repeats": 3, "median_ttft_ms": 9.0} for k in (1, 2, 3)]
    [again] = collapse([*old[1:], {"scenario": "o", "status": "ok", "repeat": 1, "repeats": 1, "median_ttft_ms": 1.0}])
    assert again["median_ttft_ms"] == 1.0 and again["n_runs"] == 1


def _bench(tmp_path, rows: list[dict]) -> None:
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_load_results_one_row_per_scenario_or_per_repeat_and_rescaled(tmp_path):
    rows = [
        _row("a", k, 3, median_ttft_ms=ttft, median_tpot_ms=tpot, output_throughput=thr)
        for k, ttft, tpot, thr in ((1, 1.0, 0.5, 2000.0), (2, 1.2, 0.6, 1800.0), (3, 1.4, 0.7, 1600.0))
    ] + [_row("b", None, None, median_ttft_ms=3.0, median_tpot_ms=1.0, output_throughput=500.0)]
    _bench(tmp_path, rows)
    per = load_results(tmp_path, per_repeat=True)
    assert list(per["scenario"]) == ["a", "a", "a", "b"] and list(per["repeat"].fillna(1)) == [1, 2, 3, 1]
    df = load_results(tmp_path, devices=8)
    assert list(df["scenario"]) == ["a", "b"] and list(df["n_runs"]) == [3, 1]
    a = df.iloc[0]
    assert a["median_tpot_ms"] == pytest.approx(0.6) and a["tok_s_per_user"] == pytest.approx(1000 / 0.6)
    assert a["output_tok_s_per_gpu"] == pytest.approx(1800 / 8)
    scaled = rescale(df, 0.05).iloc[0]  # an emulated run at time scale 0.05, back on the model's clock
    assert scaled["median_ttft_ms"] == pytest.approx(1.2 / 0.05)
    assert scaled["median_ttft_ms_ci_low"] == pytest.approx(a["median_ttft_ms_ci_low"] / 0.05)
    assert scaled["output_throughput_ci_high"] == pytest.approx(a["output_throughput_ci_high"] * 0.05)
    assert scaled["median_ttft_ms_sd"] == pytest.approx(0.2 / 0.05)
    assert scaled["median_ttft_ms_n"] == 3  # a count is not rescaled
    table = repeat_summary(per).set_index(["scenario", "metric"])
    assert table.loc[("a", "median_ttft_ms"), "mean"] == pytest.approx(1.2)
    assert table.loc[("a", "median_ttft_ms"), "t"] == pytest.approx(4.3027, abs=1e-4)
    assert math.isnan(table.loc[("b", "median_ttft_ms"), "low"]) and table.loc[("b", "median_ttft_ms"), "n"] == 1
    assert table.loc[("b", "median_ttft_ms"), "note"] == NO_INTERVAL
