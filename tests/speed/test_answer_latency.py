"""Issue 42 item 4: time to first answer token and end-to-end latency per request under the scenario's
load, per turn for a multi-turn trace, with p50/p90/p99 and their counts, beside TTFT.

The bench worker writes one record per request it sends (tools/scripts/bench_worker.py); these tests
give speed.answer_latency records shaped as it writes them (seconds from each request's start), and
bench_serving's --output-details arrays. The worker's own recording, under real bench_serving, is
test_answer_latency_real.py (heavy).
"""

from __future__ import annotations

import pandas as pd

from kimi_runbooks.speed.answer_latency import SOURCE, answer_latency, in_output_order, merge_turns
from kimi_runbooks.speed.timescale import rescale

TRACE = {"conversations": [[{"messages": []}] * 3 for _ in range(4)]}  # 4 conversations x 3 rounds


def _record(ttft: float, answer: float | None, latency: float, success: bool = True) -> dict:
    return {
        "ttft": ttft,
        "latency": latency,
        "success": success,
        "first_reasoning": ttft,
        "first_answer": answer,
        "prompt_len": 100,
        "output_len": 64,
    }


def _load() -> tuple[dict, list[dict]]:
    """12 measured requests (round k answers after 0.1 + 0.05 k s) and a warm-up the details leave out,
    recorded in completion order (not bench_serving's output order)."""
    ttfts, records = [], []
    for conv in range(4):
        for k in range(3):
            ttft = 0.010 + 0.001 * conv + 0.0001 * k
            ttfts.append(ttft)
            answer = None if (conv, k) == (3, 2) else 0.1 + 0.05 * k + 0.001 * conv  # one reasoned to the end
            records.append(_record(ttft, answer, answer + 0.2 if answer else 0.4))
    records.append(_record(0.5, 0.9, 1.0))  # the warm-up request: not among the measured ones
    return {"ttfts": ttfts, "errors": [""] * 12}, list(reversed(records))


def test_records_are_put_in_bench_servings_order_and_the_warm_up_left_out():
    raw, records = _load()
    ordered = in_output_order(raw, records)
    assert len(ordered) == 12 and all(r is not None for r in ordered)
    assert [r["ttft"] for r in ordered] == raw["ttfts"]


def test_percentiles_of_the_answer_and_end_to_end_under_load_with_their_counts_and_per_turn():
    raw, records = _load()
    out = answer_latency("sglang-oai-chat", raw, records, TRACE)
    summary = out["answer_latency"]
    assert summary["source"] == SOURCE and (summary["requests"], summary["answered"], summary["no_answer"]) == (
        12,
        11,
        1,
    )
    assert out["median_first_answer_ms"] == summary["median_first_answer_ms"] == 151.0  # the 6th of 11
    assert out["median_first_answer_ms"] <= out["p90_first_answer_ms"] <= out["p99_first_answer_ms"] < 205
    assert summary["median_e2e_latency_ms"] > summary["median_first_answer_ms"]
    assert out["first_answer_from"] == "11 of 12 requests under load"
    turns = summary["turns"]
    assert [t["turn"] for t in turns] == [0, 1, 2] and [t["requests"] for t in turns] == [4, 4, 4]
    assert [t["answered"] for t in turns] == [4, 4, 3]
    assert turns[0]["median_first_answer_ms"] < turns[1]["median_first_answer_ms"] < turns[2]["median_first_answer_ms"]
    merged = merge_turns([{"turn": k, "median_ttft_ms": 10.0} for k in range(3)], out)
    assert merged[2]["median_first_answer_ms"] == turns[2]["median_first_answer_ms"] and merged[2]["answered"] == 3


def test_a_backend_that_cannot_tell_reasoning_from_answer_keeps_end_to_end_and_says_why():
    raw, records = _load()
    out = answer_latency("sglang", raw, records)
    assert "median_first_answer_ms" not in out and "first_answer_from" not in out
    assert "only a chat backend" in out["answer_latency"]["no_answer_reason"]
    assert out["answer_latency"]["median_e2e_latency_ms"] > 0


def test_without_the_workers_timings_the_row_gains_nothing_and_the_probe_stands_in():
    raw, _ = _load()
    out = answer_latency("sglang-oai-chat", raw, None)
    assert list(out) == ["answer_latency"] and "only the bench worker" in out["answer_latency"]["note"]


def test_emulated_answer_times_are_rescaled_with_the_rest_of_the_row():
    raw, records = _load()
    out = answer_latency("sglang-oai-chat", raw, records, TRACE)
    row = {"scenario": "a", "status": "ok", "emulated": True, "median_ttft_ms": 10.0, **out}
    scaled = rescale(pd.DataFrame([row]), 0.05).iloc[0]
    assert scaled["p99_first_answer_ms"] == out["p99_first_answer_ms"] / 0.05
    nested = scaled["answer_latency"]
    assert nested["median_e2e_latency_ms"] == out["answer_latency"]["median_e2e_latency_ms"] / 0.05
    assert (
        nested["turns"][0]["median_first_answer_ms"]
        == out["answer_latency"]["turns"][0]["median_first_answer_ms"] / 0.05
    )


def test_the_per_turn_figure_draws_the_first_answer_token_beside_ttft():
    from kimi_runbooks.report.turns import turns_figure

    raw, records = _load()
    out = answer_latency("sglang-oai-chat", raw, records, TRACE)
    turns = [
        {"turn": k, "requests": 4, "mean_context_tokens": 1000.0 + 400 * k, "median_ttft_ms": 10.0} for k in range(3)
    ]
    fig = turns_figure("agentic", merge_turns(turns, out), "EMULATED")
    assert [t.name for t in fig.data][:2] == ["TTFT, EMULATED", "first answer token, EMULATED"]
    assert list(fig.data[1].y) == [t["median_first_answer_ms"] for t in out["answer_latency"]["turns"]]
    assert "first answer token 201 ms at the last turn" in fig.layout.title.text
