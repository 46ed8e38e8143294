"""The runner's logic with a fake bench command (tests/fake_bench) against an in-thread emulator.

Fast: no SGLang. The fake is used as a command prefix (like `docker exec ctr`), receives the real
`python3 -m sglang.bench_serving ...` argv and appends a JSONL line the way bench_serving does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.plan.memory import plan_memory
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle
from tests.support import FAKE_BENCH

FAKE = FAKE_BENCH


def _sc(sid: str, conc: int = 1, matrix: dict | None = None, dataset: str = "random-ids") -> Scenario:
    return Scenario(
        id=sid,
        dataset=dataset,
        input_len=matrix["context_tokens"] if matrix else 64,
        output_len=16,
        num_prompts=2 * conc,
        max_concurrency=conc,
        range_ratio=1.0,
        matrix=matrix,
    )


@pytest.fixture(scope="module")
def server():
    profile = LatencyProfile(max_total_num_tokens=20_000)
    base_url, stop = run_in_thread(EmulatorSettings(port=0, profile=profile, startup_seconds=0))
    yield base_url
    stop()


def _handle(url: str, **kw) -> RunHandle:
    return RunHandle(base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", **kw)


@pytest.mark.slow  # a speed stage run, failed and resumed: ~14 s; make test-all and CI run it
def test_statuses_resume_and_redaction(server, tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_TEST_KEY", "sk-should-never-be-written")
    argv_log = tmp_path / "argv.jsonl"
    scenarios = [
        _sc("a-c1"),
        _sc("b-c4", 4),
        _sc("cell-8k-c1", 1, {"context_tokens": 8192, "concurrency": 1}),
        _sc("cell-8k-c4", 4, {"context_tokens": 8192, "concurrency": 4}),  # 32768 > 20000 live pool
        Scenario(id="sg-c1", dataset="sharegpt", num_prompts=2, max_concurrency=1),
    ]
    env = {"FAKE_BENCH_FAIL": "b-c4", "FAKE_BENCH_ARGV_LOG": str(argv_log)}
    handle = _handle(server)
    df = speed.run_scenarios(
        scenarios,
        handle,
        RunFolder.create(tmp_path),
        offline=True,
        command_prefix=FAKE,
        env=env,
        devices=8,
        progress=False,
        timeout_s=60,
        verify_tokens=False,
    )
    status = dict(zip(df["scenario"], df["status"]))
    assert status == {
        "a-c1": "ok",
        "b-c4": "failed",
        "cell-8k-c1": "ok",
        "cell-8k-c4": "over-capacity",
        "sg-c1": "skipped",
    }
    rows = read_jsonl(tmp_path / "bench.jsonl")
    assert [r["scenario"] for r in rows] == [s.id for s in scenarios]  # in order, one line each
    by = {r["scenario"]: r for r in rows}
    assert by["a-c1"]["metrics"]["completed"] == 2 and by["a-c1"]["emulated"] is True
    assert by["a-c1"]["argv"][len(FAKE) : len(FAKE) + 3] == ["python3", "-m", "sglang.bench_serving"]
    assert Path(by["a-c1"]["log"]).exists()
    assert "Warmup failed" in by["b-c4"]["error"] and Path(by["b-c4"]["log"]).exists()
    assert "live /server_info" in by["cell-8k-c4"]["capacity"]["source"]
    assert by["cell-8k-c4"]["capacity"]["tokens_needed_per_rank"] == 4 * (8192 + 16)  # context + output
    assert "dataset_path" in by["sg-c1"]["error"]
    ok = df[df["scenario"] == "a-c1"].iloc[0]
    assert ok["label"] == "emulated"
    assert ok["output_tok_s_per_gpu"] == pytest.approx(ok["output_throughput"] / 8)
    assert ok["tok_s_per_user"] == pytest.approx(1000 / ok["median_tpot_ms"])

    # the key reached the child through the environment only, and no file holds it
    seen = [json.loads(row) for row in argv_log.read_text().splitlines()]
    assert len(seen) == 3  # a-c1, b-c4, cell-8k-c1 ran; over-capacity and skipped did not
    # rerun: only the failed and the skipped scenario are attempted again
    argv_log.unlink()
    df2 = speed.run_scenarios(
        scenarios,
        _handle(server, api_key_env="BENCH_TEST_KEY"),
        RunFolder.create(tmp_path),
        offline=True,
        command_prefix=FAKE,
        env={"FAKE_BENCH_ARGV_LOG": str(argv_log)},
        progress=False,
        dataset_path=tmp_path / "sharegpt.json",
        verify_tokens=False,
    )
    seen = [json.loads(row) for row in argv_log.read_text().splitlines()]
    ran = [next(a for a in s["argv"] if a.endswith(".jsonl") and "bench_raw" in a) for s in seen]
    assert [Path(r).stem for r in ran] == ["b-c4", "sg-c1"]
    assert all(s["key"] == "sk-should-never-be-written" for s in seen)
    assert dict(zip(df2["scenario"], df2["status"]))["b-c4"] == "ok"
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != argv_log:
            assert "sk-should-never-be-written" not in path.read_text(errors="replace"), path


def test_printed_block_fallback_and_timeout(server, tmp_path):
    sc = [_sc("p-c1")]
    df = speed.run_scenarios(
        sc,
        _handle(server),
        RunFolder.create(tmp_path),
        command_prefix=FAKE,
        progress=False,
        env={"FAKE_BENCH_NO_FILE": "1"},
        verify_tokens=False,
    )
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    assert row["status"] == "ok" and row["parsed_from"] == "printed block"
    assert df.loc[0, "median_tpot_ms"] == pytest.approx(10.5)
    t = [_sc("slow-c1")]
    speed.run_scenarios(
        t,
        _handle(server),
        RunFolder.create(tmp_path),
        command_prefix=FAKE,
        progress=False,
        env={"FAKE_BENCH_SLEEP": "30"},
        timeout_s={"slow-c1": 1.0},
        verify_tokens=False,
    )
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    assert row["status"] == "failed" and "timed out after 1 s" in row["error"]
    assert row["duration_s"] < 15


def test_dead_server_fails_fast_and_plan_estimate_used(tmp_path):
    from kimi_runbooks.catalog import load_catalog

    cat = load_catalog()
    mem = plan_memory(
        cat.platform("rtx-pro-6000"),
        cat.model("kimi-k2.6-nvfp4"),
        tp=8,
        mem_fraction_static=0.86,
        kv_cache_dtype="fp8_e4m3",
    )
    cells = [cat.scenario("matrix-ctx8k-c1"), cat.scenario("matrix-ctx123k-c128")]
    df = speed.run_scenarios(
        cells,
        "http://127.0.0.1:9",
        RunFolder.create(tmp_path),
        command_prefix=FAKE,
        memory_plan=mem,
        progress=False,
        verify_tokens=False,
    )
    status = dict(zip(df["scenario"], df["status"]))
    assert status["matrix-ctx123k-c128"] == "over-capacity"
    assert status["matrix-ctx8k-c1"] == "failed"
    row = read_jsonl(tmp_path / "bench.jsonl")[0]
    assert "connection refused at 127.0.0.1:9" in row["error"] and "rerun" in row["error"]
    assert read_jsonl(tmp_path / "bench.jsonl")[1]["capacity"]["source"] == "estimate"


def test_select_scenarios_errors():
    assert [s.id for s in speed.select_scenarios("smoke")][:1] == ["smoke-random-ids-c1"]
    assert [s.id for s in speed.select_scenarios(scenarios=["chat-1k1k-c1"])] == ["chat-1k1k-c1"]
    with pytest.raises(ValueError, match="Valid sets"):
        speed.select_scenarios("nope")
    with pytest.raises(ValueError, match="Valid scenario ids"):
        speed.select_scenarios(scenarios=["nope"])
