"""A scenario the emulator could not keep up with is marked not representative (speed/emulator_lag.py,
issue 42 item 6): at c64 and time scale 0.05 on 2 cores the report showed "64 (1 effective)" and a
7 ms TPOT where the model says 308 ms, and nothing said the host, not the model, set them."""

from __future__ import annotations

import httpx
import pandas as pd

from kimi_runbooks import speed
from kimi_runbooks.emulator.lag import FAMILIES
from kimi_runbooks.emulator.prometheus import Metrics
from kimi_runbooks.report.html_parts import table
from kimi_runbooks.report.sections import SPEED_COLUMNS
from kimi_runbooks.speed import emulator_lag
from kimi_runbooks.speed.repeats import collapse
from kimi_runbooks.speed.results import observed_columns
from kimi_runbooks.speed.server_metrics import MetricsSampler, parse_metrics, summarise

REAL_SGLANG = 'sglang:num_running_reqs{model_name="m",tp_rank="0"} 3.0\n'


def _scrape(steps: int, late: int, lag_s: float, step_s: float, running: float = 1.0) -> dict:
    m = Metrics(model_name="m")
    m.lag.steps, m.lag.late_steps, m.lag.lag_seconds, m.lag.step_seconds = steps, late, lag_s, step_s
    return {"t": 0.0, **parse_metrics(m.render(int(running), 0, 0.1, 10))}


def test_the_stage_reads_the_families_the_emulator_prints():
    assert set(emulator_lag.KEYS) == set(FAMILIES)


def test_the_lag_over_a_scenario_is_the_counters_change():
    before, after = _scrape(50, 0, 0.01, 0.77), _scrape(50 + 1000, 800, 0.01 + 10.0, 0.77 + 15.4)
    server = summarise([before, after])
    change = server["emulator_lag"]
    assert change["lag_steps"] == 1000 and change["lag_late_steps"] == 800
    verdict = emulator_lag.judge(change, time_scale=0.05)
    assert verdict["behind"] is True and verdict["late_share"] == 0.8
    assert verdict["mean_step_ms"] == 15.4 and verdict["mean_lag_ms"] == 10.0
    assert verdict["suggested_time_scale"] == 0.1  # (15.4 + 10) / 15.4 rounds up to 2x
    assert verdict["reason"].startswith("not representative: the emulator fell behind its latency model on 80%")
    assert "Fix: run it at time_scale 0.1 (now 0.05)" in verdict["reason"]


def test_an_emulator_that_kept_up_and_a_real_server_get_no_mark():
    kept = emulator_lag.judge(summarise([_scrape(0, 0, 0, 0), _scrape(1000, 20, 0.5, 15.4)])["emulator_lag"], 0.05)
    assert kept is not None and kept["behind"] is False and "reason" not in kept
    real = summarise([{"t": 0.0, **parse_metrics(REAL_SGLANG)}, {"t": 1.0, **parse_metrics(REAL_SGLANG)}])
    assert "emulator_lag" not in real and emulator_lag.judge(real.get("emulator_lag"), 1.0) is None


def test_behind_at_time_scale_1_suggests_fewer_requests_not_a_slower_clock():
    verdict = emulator_lag.judge({"lag_steps": 10, "lag_late_steps": 9, "lag_seconds": 1, "lag_step_seconds": 1}, 1.0)
    assert verdict["suggested_time_scale"] is None
    assert "Fix: fewer concurrent requests, or a host with more free cores" in verdict["reason"]


def _row(behind: bool) -> dict:
    verdict = emulator_lag.judge(
        {"lag_steps": 100, "lag_late_steps": 90 if behind else 1, "lag_seconds": 1.0, "lag_step_seconds": 1.54}, 0.05
    )
    return {
        "scenario": "c64",
        "status": "ok",
        "max_concurrency": 64,
        "saturation": {"effective_concurrency": 1.0, "saturated": True, "reasons": ["ran 1 requests at a time"]},
        "emulator_lag": verdict,
    }


def test_the_report_never_shows_a_silent_1_effective():
    cols = observed_columns(_row(behind=True))
    assert cols["emulator_behind"] is True and cols["not_representative"].startswith("not representative")
    rec = {**cols, "scenario": "c64", "max_concurrency": 64}
    inside = speed.inside_table(pd.DataFrame([rec])).iloc[0]
    assert inside["concurrency (effective)"] == "64 (1 effective: emulator behind its model)"
    assert inside["not representative because"].startswith("not representative")
    html = table(SPEED_COLUMNS, [rec])
    assert "64 (1 effective: emulator behind its model)" in html and "not representative because" in html
    kept = {**observed_columns(_row(behind=False)), "scenario": "c64", "max_concurrency": 64}
    assert "emulator behind" not in table(SPEED_COLUMNS, [kept]) and kept["not_representative"] is None


def test_one_repeat_behind_marks_the_mean():
    rows = [
        {"scenario": "c64", "status": "ok", "repeat": i + 1, "repeats": 2, "median_tpot_ms": 7.0 + i}
        | observed_columns(_row(behind=i == 0))
        for i in range(2)
    ]
    row = collapse(rows)[0]
    assert row["emulator_behind"] is True and row["not_representative"].startswith("1 of 2 repeats: not representative")


def test_the_sampler_reads_the_emulators_counters(emulator_url: str):
    with MetricsSampler(emulator_url, interval_s=5.0, first_interval_s=5.0) as sampler:
        body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 8, "ignore_eos": True}}
        httpx.post(emulator_url + "/generate", json=body, timeout=30).raise_for_status()
    change = sampler.summary()["emulator_lag"]
    assert change["lag_steps"] == 8 and change["lag_step_seconds"] > 0
