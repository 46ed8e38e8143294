"""Fresh prompts (speed/freshness.py, issue 42 item 1): every run of a scenario (a sweep step, a probe,
a repeat) gets a seed no earlier run of the folder used and a cache flush where the server has one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks import speed
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.report.frontier import operating_point_lines
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed import operating_point as op
from kimi_runbooks.speed.freshness import BENCH_DEFAULT_SEED, plan_prompts, seed_of, used_seeds
from kimi_runbooks.target.locate import RunHandle
from tests.support import FAKE_BENCH, tiny_scenario


def test_a_sweep_whose_scenarios_leave_the_seed_unset_does_not_resend_seed_42s_prompts() -> None:
    used: set[int] = set()
    seeds = []
    for c in (1, 2, 4):
        prompts = plan_prompts(tiny_scenario(f"sweep-c{c}", seed=None, max_concurrency=c), None, used, True)
        seeds.append(prompts.seed)
        used.add(prompts.seed)
    assert seeds == [BENCH_DEFAULT_SEED, BENCH_DEFAULT_SEED + 1, BENCH_DEFAULT_SEED + 2]
    assert seed_of(["-m", "x"]) == BENCH_DEFAULT_SEED and seed_of(["--seed", "7"]) == 7 and seed_of([]) is None
    assert used_seeds([{"argv": ["--seed", "5"]}, {"argv": []}, {"argv": ["x"]}]) == {5, BENCH_DEFAULT_SEED}


def test_the_label_says_fresh_or_shared_prefix_and_whether_the_cache_was_flushed() -> None:
    fresh = plan_prompts(tiny_scenario("a"), None, {1}, True)
    assert (fresh.kind, fresh.seed, fresh.flush_cache) == ("fresh", 2, True)
    assert "1 was used by an earlier run" in fresh.note and "flushed after the warm-up" in fresh.note
    trace = tiny_scenario("t", dataset="mooncake", backend="sglang")
    shared = plan_prompts(trace, None, set(), False)
    assert shared.kind == "shared-prefix" and not shared.flush_cache and "no /flush_cache" in shared.note


@pytest.fixture(scope="module")
def server() -> Any:
    base_url, stop = run_in_thread(EmulatorSettings(port=0, profile=LatencyProfile(), startup_seconds=0))
    yield base_url
    stop()


def test_probes_sweep_steps_and_repeats_each_send_new_prompts_and_flush(server: str, tmp_path: Path) -> None:
    """Through the stage's runner: two sweep steps with seed null (bench_serving's 42 for both before),
    an operating-point search whose probes all carried the scenario's seed 1, and a repeated scenario."""
    argv_log = tmp_path / "argv.jsonl"
    search = {"over": "max_concurrency", "low": 1, "high": 8, "step": 1, "criterion": "median"}
    scenarios = [
        tiny_scenario("sweep-c1", seed=None, max_concurrency=1),
        tiny_scenario("sweep-c2", seed=None, max_concurrency=2),
        tiny_scenario("op", slo={"tpot_ms": 13.0}, max_concurrency=None, search=search),
        tiny_scenario("rep", repeats=2),
    ]
    settings: dict[str, Any] = {"offline": True, "command_prefix": FAKE_BENCH, "progress": False, "devices": 8}
    settings |= {"verify_tokens": False, "answer_probe": 0, "timeout_s": 60}
    handle = RunHandle(base_url=server, model="moonshotai/Kimi-K2.6", launcher="emulator")
    speed.run_scenarios(
        scenarios, handle, RunFolder.create(tmp_path / "run"), env={"FAKE_BENCH_ARGV_LOG": str(argv_log)}, **settings
    )
    sent = [json.loads(line)["argv"] for line in argv_log.read_text().splitlines()]
    seeds = [seed_of(argv) for argv in sent]
    assert len(sent) >= 6 and len(set(seeds)) == len(seeds), seeds  # no run resent an earlier run's prompts
    assert all("--flush-cache" in argv for argv in sent)  # the emulator answers /server_info: it can flush
    rows = read_jsonl(tmp_path / "run" / "bench.jsonl")
    assert {r["prompts"]["kind"] for r in rows} == {"fresh"}
    df = speed.load_results(tmp_path / "run")
    assert set(df["prompts"]) == {"fresh"} and df["prompts_note"].str.contains("seed").all()
    # the point the report states is the one fresh runs replayed: median TPOT 10 + 0.5 c <= 13 up to c6
    (found,) = op.summaries(rows)
    confirming = [r for r in rows if str(r["scenario"]).endswith("~confirm")]
    assert found.confirmed == 6 and [r["search"]["value"] for r in confirming] == [6, 6, 6]
    (line,) = operating_point_lines(tmp_path / "run", df, True, None)
    assert "operating point max_concurrency 6, confirmed: 3 of 3 fresh runs at 6 met the SLO" in line
