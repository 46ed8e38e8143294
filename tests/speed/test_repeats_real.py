"""repeats=3 through SGLang's real bench_serving (the `bench` tool env) against the emulator: three
rows, three output files written by the real client, and a 95% interval around their mean.

Heavy: needs .venvs/bench; with CI=true a missing env is a failure, not a skip.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kimi_runbooks import speed
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed.repeats import interval
from kimi_runbooks.target.locate import RunHandle
from tests.support import tiny_scenario

pytestmark = pytest.mark.heavy


def test_three_repeats_of_one_scenario_with_the_real_client(require_tool_env, tmp_path):
    env = require_tool_env("bench")
    tokenizer = make_offline_tokenizer(tmp_path / "tokenizer", env=env)
    options = speed.SpeedOptions(tokenizer=tokenizer, offline=True, timeout_s=300, progress=False, repeats=3)
    scenario = tiny_scenario("rep-c2", num_prompts=4, max_concurrency=2)
    with start_subprocess(["--profile", "h200", "--time-scale", "0.05"]) as emu:
        handle = RunHandle(base_url=emu.base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200")
        df = speed.run_scenarios(
            [scenario], handle, RunFolder.create(tmp_path / "run"), options, devices=8, platform="h200"
        )
    rows = read_jsonl(tmp_path / "run" / "bench.jsonl")
    assert [(r["repeat"], r["repeats"], r["status"]) for r in rows] == [(1, 3, "ok"), (2, 3, "ok"), (3, 3, "ok")], [
        r.get("error") for r in rows
    ]
    for row in rows:
        assert row["parsed_from"] == "output-file" and row["metrics"]["completed"] == 4
        assert "--flush-cache" in row["argv"]  # each repeat starts without the previous one's prompts cached
    assert len({Path(r["output_file"]).name for r in rows}) == 3  # the real client wrote one file per repeat
    ttfts = [r["metrics"]["median_ttft_ms"] for r in rows]
    [summary] = df.to_dict("records")
    assert summary["n_runs"] == 3 and summary["status"] == "ok"
    assert summary["median_ttft_ms"] == pytest.approx(sum(ttfts) / 3)
    expected = interval(ttfts)
    assert expected is not None and expected.low is not None
    assert summary["median_ttft_ms_ci_low"] == pytest.approx(expected.low)
    assert summary["median_ttft_ms_ci_high"] == pytest.approx(expected.high)
    for metric in ("median_ttft_ms", "median_tpot_ms", "output_throughput"):
        low, mean, high = (summary[f"{metric}{s}"] for s in ("_ci_low", "", "_ci_high"))
        assert math.isfinite(low) and low < mean < high, (metric, low, mean, high)  # timed runs differ
    table = speed.repeat_summary(speed.load_results(tmp_path / "run", per_repeat=True))
    assert set(table["n"]) == {3} and table["note"].str.contains("Student t, 2 degrees of freedom").all()
