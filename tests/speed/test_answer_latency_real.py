"""Issue 42 item 4 under SGLang's own bench_serving: the bench worker times every request's first
reasoning token, first answer token and end, under the scenario's load and per turn of a trace.

The `agentic` set's coding trace (4 conversations of 3 rounds, 96 completion tokens a round so the
emulator's reasoning ends and its answer starts) at concurrency 2, through the speed stage's worker.
Each measured request gets a record; the first answer comes after the first token (the reasoning
streams first), the end after the first answer; p50 <= p90 <= p99; each turn has its own figures;
the three single requests after the scenario (the probe) are no longer sent.

Heavy: needs the bench tool env (skipped locally without it; an error with CI=true).
"""

from __future__ import annotations

import time

import pytest

from kimi_runbooks import speed
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle
from tests.support.agentic_replay import agentic_design

pytestmark = pytest.mark.heavy


def test_answer_latency_per_request_under_load_and_per_turn(require_tool_env, tmp_path):
    tokenizer = make_offline_tokenizer(tmp_path / "tokenizer", env=require_tool_env("bench"))
    from kimi_runbooks.catalog import load_catalog

    agentic = next(s for s in load_catalog().scenario_sets["agentic"].scenarios if s.dataset == "agentic-trace")
    scenario = agentic.model_copy(update={"trace": agentic_design(turns=3, output_len=96)})
    t0 = time.monotonic()
    with start_subprocess(["--time-scale", "0.05", "--enable-metrics"]) as emu:
        handle = RunHandle(
            base_url=emu.base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", emulated=True, time_scale=0.05
        )
        speed.run_scenarios(
            [scenario], handle, RunFolder.create(tmp_path / "run"), tokenizer=tokenizer, offline=True, timeout_s=300,
            progress=False, verify_tokens=False, sample_metrics=False,
        )  # fmt: skip
    row = read_jsonl(tmp_path / "run" / "bench.jsonl")[-1]
    found = row["answer_latency"]
    print(f"\n{time.monotonic() - t0:.1f} s; TTFT p50 {row['metrics']['median_ttft_ms']:.1f} ms; answer {found}")
    assert row["status"] == "ok", row.get("error")
    assert found["requests"] == 12 and found["unmatched"] == 0  # every measured round, the warm-up left out
    assert found["answered"] + found["no_answer"] == 12 and found["answered"] >= 9
    assert row["median_first_answer_ms"] > row["metrics"]["median_ttft_ms"]  # the reasoning streams first
    assert found["median_first_answer_ms"] <= found["p90_first_answer_ms"] <= found["p99_first_answer_ms"]
    assert found["median_e2e_latency_ms"] > found["median_first_answer_ms"]
    assert row["first_answer_from"] == f"{found['answered']} of 12 requests under load"
    assert [t["turn"] for t in found["turns"]] == [0, 1, 2] and all(t["requests"] == 4 for t in found["turns"])
    assert all("median_first_answer_ms" in t for t in row["turns"])  # beside each turn's TTFT
    assert "first_answer" not in row  # the probe's single requests after the scenario were not needed
