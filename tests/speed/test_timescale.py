"""Emulated results are put back on the latency model's clock before anyone compares them."""

from __future__ import annotations

import pandas as pd
import pytest

from kimi_runbooks.speed.timescale import rescale


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "scenario": "s",
                "status": "ok",
                "emulated": True,
                "devices": 8,
                "duration": 2.0,
                "median_tpot_ms": 1.0,
                "p99_itl_ms": 2.0,
                "median_ttft_ms": 10.0,
                "output_throughput": 1000.0,
                "total_throughput": 2000.0,
                "request_throughput": 4.0,
            }
        ]
    )


def test_latencies_divided_and_throughputs_multiplied_by_the_time_scale() -> None:
    out = rescale(_rows(), 0.05).iloc[0]
    assert out["median_tpot_ms"] == pytest.approx(20.0) and out["median_ttft_ms"] == pytest.approx(200.0)
    assert out["p99_itl_ms"] == pytest.approx(40.0) and out["duration"] == pytest.approx(40.0)
    assert out["output_throughput"] == pytest.approx(50.0) and out["request_throughput"] == pytest.approx(0.2)
    assert out["tok_s_per_user"] == pytest.approx(50.0)  # 1000 / 20 ms, recomputed
    assert out["output_tok_s_per_gpu"] == pytest.approx(50.0 / 8)
    assert bool(out["rescaled"]) and out["time_scale"] == 0.05


def test_real_time_and_measured_rows_are_left_alone() -> None:
    assert rescale(_rows(), 1.0).iloc[0]["median_tpot_ms"] == 1.0
    assert rescale(_rows(), None).iloc[0]["median_tpot_ms"] == 1.0
    measured = _rows().assign(emulated=False)
    row = rescale(measured, 0.05).iloc[0]
    assert row["median_tpot_ms"] == 1.0 and not bool(row["rescaled"])


def _with_turns(emulated: bool = True) -> pd.DataFrame:
    turns = [
        {
            "turn": 0,
            "requests": 3,
            "mean_context_tokens": 1200.0,
            "median_ttft_ms": 5.0,
            "cache_hit_rate": 0.1,
            "tok_s_per_user": 1000.0,
        },
        {
            "turn": 1,
            "requests": 3,
            "mean_context_tokens": 1500.0,
            "median_ttft_ms": 2.5,
            "cache_hit_rate": None,
            "tok_s_per_user": None,
        },
    ]
    return _rows().assign(emulated=emulated, turns=[turns])


def test_per_turn_figures_follow_the_row_onto_time_scale_one() -> None:
    row = rescale(_with_turns(), 0.05).iloc[0]
    first, second = row["turns"]
    assert first["median_ttft_ms"] == pytest.approx(100.0) and second["median_ttft_ms"] == pytest.approx(50.0)
    assert first["tok_s_per_user"] == pytest.approx(50.0) and second["tok_s_per_user"] is None
    # what is not a time stays as it was
    assert first["mean_context_tokens"] == 1200.0 and first["cache_hit_rate"] == 0.1 and first["turn"] == 0
    # the turn TTFT and the row's TTFT moved by the same factor
    assert first["median_ttft_ms"] / 5.0 == pytest.approx(row["median_ttft_ms"] / 10.0)


def test_measured_turns_and_the_input_frame_are_left_alone() -> None:
    measured = _with_turns(emulated=False)
    assert rescale(measured, 0.05).iloc[0]["turns"][0]["median_ttft_ms"] == 5.0
    emulated = _with_turns()
    rescale(emulated, 0.05)
    assert emulated.iloc[0]["turns"][0]["median_ttft_ms"] == 5.0  # a copy, not the caller's rows
    no_turns = _rows().assign(turns=[float("nan")])
    assert pd.isna(rescale(no_turns, 0.05).iloc[0]["turns"])
