"""SGLang's real bench_serving (the `bench` tool env) through the runner against the emulator.

Heavy: needs .venvs/bench (bash scripts/setup_tool_env.sh bench). Skipped on a machine without
it; with CI=true a missing env is a failure, not a skip.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle
from tests.support import tiny_scenario

pytestmark = pytest.mark.heavy


@pytest.fixture(scope="module")
def bench_env(require_tool_env):
    return require_tool_env("bench")


@pytest.fixture(scope="module")
def tokenizer(bench_env, tmp_path_factory):
    return make_offline_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer", env=bench_env)


@pytest.fixture(scope="module")
def real_client(tokenizer) -> speed.SpeedOptions:
    """How these tests run the real bench_serving: offline, with the emulator's tokenizer."""
    return speed.SpeedOptions(tokenizer=tokenizer, offline=True, timeout_s=300, progress=False)


def _handle(url: str) -> RunHandle:
    return RunHandle(base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200")


def test_smoke_set_with_the_real_client(bench_env, real_client, tmp_path):
    smoke = speed.select_scenarios("smoke")
    with start_subprocess(["--profile", "h200", "--time-scale", "0.05"]) as emu:
        df = speed.run_scenarios(
            smoke, _handle(emu.base_url), RunFolder.create(tmp_path), real_client, devices=8, platform="h200"
        )
    rows = {r["scenario"]: r for r in read_jsonl(tmp_path / "bench.jsonl")}
    assert list(df["scenario"]) == [s.id for s in smoke]
    for sc in smoke:
        row = rows[sc.id]
        assert row["status"] == "ok", row.get("error")
        assert row["emulated"] is True  # from the emulator's /server_info, not from the handle
        assert row["parsed_from"] == "output-file"
        m = row["metrics"]
        assert m["completed"] == sc.num_prompts
        assert m["total_output_tokens"] == sc.num_prompts * sc.output_len  # range ratio 1: exact
        assert m["backend"] == sc.backend and m["max_concurrency"] == sc.max_concurrency
        # the JSONL the real client wrote, and its printed block, parse to the same numbers
        from_file = speed.parse_result_text(Path(row["output_file"]).read_text())
        from_log = speed.parse_block(Path(row["log"]).read_text())
        shared = set(from_file) & set(from_log) - {"backend", "request_rate"}
        assert len(shared) >= 25, sorted(shared)
        for key in shared:
            a, b = float(from_file[key]), float(from_log[key])
            assert math.isclose(a, b, abs_tol=0.006), (key, a, b)  # printed with 2 decimals
        assert from_file["request_rate"] == math.inf == from_log["request_rate"]
    ok = df.iloc[0]
    assert ok["label"] == "emulated"
    assert ok["output_tok_s_per_gpu"] == pytest.approx(ok["output_throughput"] / 8)
    assert ok["tok_s_per_user"] == pytest.approx(1000 / ok["median_tpot_ms"])


def _kill_when(emu, path: Path, text: str, stop: threading.Event) -> None:
    while not stop.is_set():
        if path.exists() and text in path.read_text(errors="replace"):
            emu.process.kill()  # our own child, by its handle: a crash, not a shutdown
            return
        time.sleep(0.05)


def test_killed_server_keeps_finished_results_and_rerun_resumes(bench_env, real_client, tmp_path):
    scenarios = [
        tiny_scenario(sid, out, num_prompts=6) for sid, out in (("first-c1", 16), ("second-c1", 400), ("third-c1", 16))
    ]
    emu = start_subprocess(["--profile", "h200", "--time-scale", "0.3"])
    port, stop = emu.port, threading.Event()
    watcher = threading.Thread(
        target=_kill_when,
        args=(emu, tmp_path / "logs" / "bench-second-c1.log", "Starting main benchmark run", stop),
        daemon=True,
    )
    watcher.start()
    try:
        speed.run_scenarios(scenarios, _handle(emu.base_url), RunFolder.create(tmp_path), real_client)
    finally:
        stop.set()
        emu.stop()
    first = read_jsonl(tmp_path / "bench.jsonl")
    assert [(r["scenario"], r["status"]) for r in first] == [
        ("first-c1", "ok"),
        ("second-c1", "failed"),
        ("third-c1", "failed"),
    ]
    assert first[1]["error"] and Path(first[1]["log"]).exists()
    assert "connection refused" in first[2]["error"]
    kept = Path(first[0]["output_file"]).read_text()

    with start_subprocess(["--profile", "h200", "--time-scale", "0.05"], port=port) as emu2:
        df = speed.run_scenarios(scenarios, _handle(emu2.base_url), RunFolder.create(tmp_path), real_client)
    rows = read_jsonl(tmp_path / "bench.jsonl")
    assert [(r["scenario"], r["status"]) for r in rows[3:]] == [("second-c1", "ok"), ("third-c1", "ok")]
    assert Path(first[0]["output_file"]).read_text() == kept  # first scenario not run again
    assert dict(zip(df["scenario"], df["status"])) == {"first-c1": "ok", "second-c1": "ok", "third-c1": "ok"}


def test_time_scaled_rehearsal_is_rescaled_to_the_profile(bench_env, real_client, tmp_path):
    """A 20x-fast rehearsal (time scale 0.05) of a known latency model reads, after rescaling,
    as that model: median TPOT within 20% of the configured 20 ms."""
    from kimi_runbooks.speed.timescale import rescale

    scenario = Scenario(
        id="ts-c1",
        dataset="random-ids",
        input_len=64,
        output_len=64,
        num_prompts=4,
        max_concurrency=1,
        range_ratio=1.0,
        backend="sglang",
    )
    flags = [
        "--time-scale",
        "0.05",
        "--ttft-ms",
        "100",
        "--ttft-per-1k-ms",
        "0",
        "--itl-ms",
        "20",
        "--itl-per-running-ms",
        "0",
    ]
    with start_subprocess(flags) as emu:
        df = speed.run_scenarios(
            [scenario],
            _handle(emu.base_url),
            RunFolder.create(tmp_path),
            real_client,
            devices=8,
            platform="h200",
        )
    raw = df.iloc[0]
    assert raw["status"] == "ok", raw.get("error")
    assert raw["median_tpot_ms"] == pytest.approx(1.0, rel=0.5)  # 0.05 x 20 ms, plus client overhead
    real = rescale(df, 0.05).iloc[0]
    # the model's 20 ms per token, plus the client's per-token overhead scaled up 20x with it (0.25 ms
    # of raw overhead on a loaded machine reads 5 ms here): an unscaled TPOT (1 ms) or one scaled
    # twice (400 ms) still fails
    assert 19.0 <= real["median_tpot_ms"] < 30.0
    # TTFT carries the client's per-request overhead (HTTP, tokenizing), scaled up 20x with the
    # rest: never below the model's 100 ms, and visibly above it (the report says rescaled). The
    # upper bound only has to tell a scaled TTFT from an unscaled one, which would read 2000 ms:
    # CI's loaded machine added 10 ms of raw overhead (305 ms rescaled), so 300 ms was too tight.
    assert 95.0 <= real["median_ttft_ms"] < 1000.0
