"""Repeats through the runner (fake bench command, in-thread emulator): one row per repeat appended as
it finishes, each repeat its own output file with the prefix cache flushed, and a stage killed in the
middle of repeat 2 resuming at repeat 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kimi_runbooks import speed
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle
from tests.support import FAKE_BENCH, tiny_scenario


@pytest.fixture(scope="module")
def server():
    base_url, stop = run_in_thread(EmulatorSettings(port=0, profile=LatencyProfile(), startup_seconds=0))
    yield base_url
    stop()


def _options(argv_log: Path, **env: str) -> speed.SpeedOptions:
    return speed.SpeedOptions(
        offline=True,
        command_prefix=FAKE_BENCH,
        env={"FAKE_BENCH_ARGV_LOG": str(argv_log), "FAKE_BENCH_JITTER": "1", **env},
        progress=False,
        timeout_s=60,
        verify_tokens=False,
        devices=8,
    )


def _ran(argv_log: Path) -> list[str]:
    """The output file stem of each bench run the fake client saw, in order."""
    seen = [json.loads(line)["argv"] for line in argv_log.read_text().splitlines()]
    return [Path(next(a for a in argv if a.endswith(".jsonl") and "bench_raw" in a)).name[:-6] for argv in seen]


@pytest.mark.slow  # whole speed stages with the real client, repeated: ~19 s; make test-all and CI run it
def test_stage_repeats_each_scenario_and_a_scenario_sets_its_own(server, tmp_path):
    handle = RunHandle(base_url=server, model="moonshotai/Kimi-K2.6", launcher="emulator")
    argv_log = tmp_path / "argv.jsonl"
    scenarios = [tiny_scenario("a-c1"), tiny_scenario("b-c1", repeats=2), tiny_scenario("c-c1", repeats=1)]
    df = speed.run_scenarios(scenarios, handle, RunFolder.create(tmp_path), _options(argv_log), repeats=3)
    assert _ran(argv_log) == ["a-c1.r1", "a-c1.r2", "a-c1.r3", "b-c1.r1", "b-c1.r2", "c-c1"]
    seen = [json.loads(line)["argv"] for line in argv_log.read_text().splitlines()]
    assert all("--flush-cache" in argv for argv in seen)  # every run flushes (speed/freshness.py)
    seeds = [argv[argv.index("--seed") + 1] for argv in seen]
    assert len(set(seeds)) == 6  # and sends new prompts: each repeat its own seed
    rows = read_jsonl(tmp_path / "bench.jsonl")
    assert [(r["scenario"], r["repeat"], r["repeats"]) for r in rows] == [
        ("a-c1", 1, 3),
        ("a-c1", 2, 3),
        ("a-c1", 3, 3),
        ("b-c1", 1, 2),
        ("b-c1", 2, 2),
        ("c-c1", 1, 1),
    ]
    assert len({r["log"] for r in rows}) == 6  # each repeat keeps its own log and output file
    by = df.set_index("scenario")
    assert list(by["n_runs"]) == [3, 2, 1]
    # the fake client's median TTFT is 101 ms + 2 (k - 1): 101, 103, 105 -> mean 103, sd 2, t(2) 4.303
    assert by.loc["a-c1", "median_ttft_ms"] == pytest.approx(103.0)
    assert by.loc["a-c1", "median_ttft_ms_ci_high"] - 103.0 == pytest.approx(4.302653 * 2 / 3**0.5)
    assert pd_isna(by.loc["c-c1", "median_ttft_ms_ci_low"]) and "no interval" in by.loc["c-c1", "interval_note"]


def pd_isna(value: object) -> bool:
    return value != value  # NaN


KILLED = """
import sys
from kimi_runbooks import speed
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle
from tests.support import FAKE_BENCH, tiny_scenario
handle = RunHandle(base_url=sys.argv[1], model="moonshotai/Kimi-K2.6", launcher="emulator")
env = {"FAKE_BENCH_ARGV_LOG": sys.argv[3], "FAKE_BENCH_HANG": "a-c1.r2"}
speed.run_scenarios([tiny_scenario("a-c1", repeats=3)], handle, RunFolder.create(sys.argv[2]), offline=True,
                    command_prefix=FAKE_BENCH,
                    env=env, progress=False, timeout_s=600, verify_tokens=False)
"""


@pytest.mark.slow  # a speed stage killed and resumed: ~12 s; make test-all and CI run it
def test_a_stage_killed_during_a_repeat_resumes_at_that_repeat(server, tmp_path):
    argv_log = tmp_path / "argv.jsonl"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, server, str(tmp_path), str(argv_log)],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not (argv_log.exists() and "a-c1.r2" in argv_log.read_text()):  # repeat 2 is running (hung)
            assert proc.poll() is None and time.monotonic() < deadline, "the stage ended before repeat 2 started"
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the stage: a killed notebook kernel
        proc.wait()
        for line in argv_log.read_text().splitlines() if argv_log.exists() else []:
            try:  # the hung bench child runs in its own session (procs.start_session): ours, by its pid
                os.killpg(json.loads(line)["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
    rows = read_jsonl(tmp_path / "bench.jsonl")
    assert [(r["repeat"], r["status"]) for r in rows] == [(1, "ok")]  # repeat 1 was appended before the kill
    argv_log.unlink()
    handle = RunHandle(base_url=server, model="moonshotai/Kimi-K2.6", launcher="emulator")
    df = speed.run_scenarios([tiny_scenario("a-c1", repeats=3)], handle, RunFolder.create(tmp_path), _options(argv_log))
    assert _ran(argv_log) == ["a-c1.r2", "a-c1.r3"]  # repeat 1 is not run again
    assert [r["repeat"] for r in read_jsonl(tmp_path / "bench.jsonl")] == [1, 2, 3]
    assert df.iloc[0]["n_runs"] == 3 and df.iloc[0]["status"] == "ok"
    again = speed.run_scenarios(
        [tiny_scenario("a-c1", repeats=3)], handle, RunFolder.create(tmp_path), _options(argv_log)
    )
    assert _ran(argv_log) == ["a-c1.r2", "a-c1.r3"] and again.iloc[0]["n_runs"] == 3  # all finished: nothing run
