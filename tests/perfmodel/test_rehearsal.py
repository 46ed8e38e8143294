"""A rehearsal behaves like the prediction: SGLang's real bench_serving against the emulator with
a platform's predicted profile measures what the performance model predicts for that plan.

Heavy: needs .venvs/bench. Skipped on a machine without it; with CI=true a missing env fails.
"""

from __future__ import annotations

import pytest

from kimi_runbooks import speed
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.perfmodel import Predictor, Scenario
from kimi_runbooks.plan import plan
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle

pytestmark = pytest.mark.heavy

# Real time. At 0.2 the client's own overhead is scaled up 5x with the rest: the second wave's
# requests reached the server spread out by up to a prefill, so fewer of them queued and the median
# TTFT read 12% under the prediction (1.83 s against 2.09 s) while TPOT and throughput held within
# 1%; at 1.0 it read 2.17 s (+3.5%). The rehearsal takes ~20 s of wall time.
TIME_SCALE = 1.0


@pytest.fixture(scope="module")
def bench_env(require_tool_env):
    return require_tool_env("bench")


def test_a_fixed_length_burst_rehearses_as_predicted(bench_env, catalog, tmp_path):
    """8 clients, 16 equal requests of 2000/64 tokens on the H200 plan: two waves of 8 prefills
    back to back, each followed by a decode of the 8 together (perfmodel.queueing). Measured here:
    within 1% of the prediction on all three medians; 10% leaves room for a loaded machine."""
    smoke = catalog.scenario("smoke-random-ids-c4")
    burst = smoke.model_copy(
        update={
            "id": "rehearsal-2000-64-c8",
            "input_len": 2000,
            "output_len": 64,
            "num_prompts": 16,
            "max_concurrency": 8,
            # bench_serving's warm-up sends the first prompt once more; with the radix cache the measured
            # copy of it would skip its prefill (as on SGLang, which flushes only in its own CI), which
            # the performance model does not model: flush after the warm-up, as SGLang's CI does
            "extra_args": {**smoke.extra_args, "--flush-cache": True},
        }
    )
    tokenizer = make_offline_tokenizer(tmp_path / "tokenizer", env=bench_env)
    with start_subprocess(["--profile", "h200", "--time-scale", str(TIME_SCALE)]) as emu:
        handle = RunHandle(base_url=emu.base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200")
        speed.run_scenarios(
            [burst],
            handle,
            RunFolder.create(tmp_path),
            tokenizer=tokenizer,
            offline=True,
            devices=8,
            platform="h200",
            progress=False,
        )
    row = read_jsonl(tmp_path / "bench.jsonl")[0]
    assert row["status"] == "ok", row.get("error")
    m = row["metrics"]
    measured = {
        "median_ttft_ms": m["median_ttft_ms"] / TIME_SCALE,
        "median_tpot_ms": m["median_tpot_ms"] / TIME_SCALE,
        "output_throughput": m["output_throughput"] * TIME_SCALE,
    }
    p = Predictor(plan({"platform": "h200"}, catalog)).predict(
        Scenario(2000, 64, concurrency=8, num_prompts=16, fixed_lengths=True)
    )
    for metric, value in measured.items():
        assert value == pytest.approx(getattr(p, metric), rel=0.1), (metric, value, getattr(p, metric))
