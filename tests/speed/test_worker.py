"""Issue 15 item 6: the scenarios of a speed stage run in one long-lived bench_serving worker.

Heavy (the bench env): results keep every key and, against a fixed emulator profile, stay within
noise of one-process-per-scenario; a worker killed mid-scenario fails that scenario only and the
next runs in a new worker; a timed-out scenario stops the worker; a python without sglang makes
the runner fall back to one process per scenario."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed.worker import BenchWorker, WorkerUnavailable
from kimi_runbooks.target.locate import RunHandle
from tests.support import tiny_scenario

pytestmark = pytest.mark.heavy

PROFILE = ["--ttft-ms", "40", "--ttft-per-1k-ms", "0", "--itl-ms", "8", "--itl-per-running-ms", "0"]


def _scenario(sid: str, prompts: int = 12, output_len: int = 16) -> Scenario:
    return tiny_scenario(
        sid, output_len, prompts, title=sid, max_concurrency=4, request_rate="inf", warmup_requests=0, backend="sglang"
    )


@pytest.fixture(scope="module")
def tokenizer(require_tool_env, tmp_path_factory):
    env = require_tool_env("bench")
    return make_offline_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer", env=env)


def _handle(url: str) -> RunHandle:
    return RunHandle(base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200")


def _run(url, tokenizer, folder, scenarios, **kw):
    """run_scenarios takes a RunFolder (made once, at the edge): a path here is opened as one."""
    folder = folder if isinstance(folder, RunFolder) else RunFolder.create(folder)
    return speed.run_scenarios(
        scenarios, _handle(url), folder, tokenizer=tokenizer, offline=True, devices=8, platform="h200",
        progress=False, verify_tokens=False, sample_metrics=False, **kw,
    )  # fmt: skip


ATTEMPTS = 3
ITL_FLOOR_MS = 8 * 0.9
"""The profile's 8 ms token gap, less jitter: a median below it is the emulator releasing late tokens
in a burst (a host that fell behind its latency model, emulator/lag.py), not either runner's figure."""


def test_worker_results_match_one_process_per_scenario(tokenizer, tmp_path):
    """The pair is run again (fresh folders) when the emulator fell behind on either run: CI once read a
    worker median ITL of 0.03 ms against 8.1 ms, the burst of a host busy with other tests."""
    scenarios = [_scenario("w-a"), _scenario("w-b")]
    with start_subprocess(["--time-scale", "1.0", *PROFILE]) as emu:
        for attempt in range(1, ATTEMPTS + 1):
            worker_dir, process_dir = tmp_path / f"worker{attempt}", tmp_path / f"process{attempt}"
            by_worker = _run(emu.base_url, tokenizer, worker_dir, scenarios, worker=True)
            by_process = _run(emu.base_url, tokenizer, process_dir, scenarios, worker=False)
            rows_w, rows_p = read_jsonl(worker_dir / "bench.jsonl"), read_jsonl(process_dir / "bench.jsonl")
            itls = [r.get("metrics", {}).get("median_itl_ms", 0.0) for r in rows_w + rows_p]
            if min(itls) >= ITL_FLOOR_MS:
                break
            print(f"attempt {attempt}: the emulator fell behind (median ITLs {itls} ms): run again")
    assert [r["status"] for r in rows_w + rows_p] == ["ok"] * 4
    assert rows_w[0]["argv"] == [
        a if "process" not in a else a.replace(process_dir.name, worker_dir.name) for a in rows_p[0]["argv"]
    ]  # the same CLI arguments either way (only the run folder differs)
    for w, p in zip(rows_w, rows_p, strict=True):
        assert set(w["metrics"]) == set(p["metrics"])  # every key of the CLI's result line
        assert w["metrics"]["completed"] == p["metrics"]["completed"] == 12
        # Within noise: on a loaded 2-core machine the two runs' medians drift apart by tens of ms of
        # scheduling delay (CI read 82 vs 100 ms TTFT), so the bound is absolute as well as relative.
        # A worker that measured something else (a re-loaded tokenizer, a cold connection per request)
        # adds far more, and both must sit above the profile's floor.
        assert w["metrics"]["median_ttft_ms"] == pytest.approx(p["metrics"]["median_ttft_ms"], rel=0.15, abs=30)
        assert w["metrics"]["median_itl_ms"] == pytest.approx(p["metrics"]["median_itl_ms"], rel=0.15, abs=4)
        for row in (w, p):
            assert row["metrics"]["median_ttft_ms"] >= 40 and row["metrics"]["median_itl_ms"] >= ITL_FLOOR_MS
    assert list(by_worker.columns) == list(by_process.columns)
    log = (worker_dir / "logs" / "bench-w-b.log").read_text()
    assert "Serving Benchmark Result" in log  # the CLI's printed block, in the scenario's own log


def _workers() -> list[int]:
    """Pids of this test process's running bench workers (pgrep without a shell, which would match itself)."""
    found = subprocess.run(
        ["pgrep", "-P", str(os.getpid()), "-f", "bench_worker.py"], capture_output=True, text=True
    ).stdout
    return sorted(int(p) for p in found.split())


def _kill_worker_when_running(folder, stop: threading.Event) -> None:
    log = folder / "logs" / "bench-crash.log"
    while not stop.is_set():
        if log.exists() and "/40 [" in log.read_text(errors="replace"):  # requests under way
            out = _workers()
            if out:
                os.kill(out[-1], signal.SIGKILL)
                return
        time.sleep(0.05)


def test_a_killed_worker_fails_its_scenario_and_the_next_runs_in_a_new_one(tokenizer, tmp_path):
    scenarios = [_scenario("crash", prompts=40, output_len=64), _scenario("after")]
    stop = threading.Event()
    killer = threading.Thread(target=_kill_worker_when_running, args=(tmp_path, stop), daemon=True)
    with start_subprocess(["--time-scale", "1.0", *PROFILE]) as emu:
        killer.start()
        try:
            _run(emu.base_url, tokenizer, tmp_path, scenarios, worker=True)
        finally:
            stop.set()
    rows = {r["scenario"]: r for r in read_jsonl(tmp_path / "bench.jsonl")}
    assert rows["crash"]["status"] == "failed" and rows["crash"]["returncode"] == -signal.SIGKILL
    assert rows["after"]["status"] == "ok", rows["after"].get("error")


def test_a_timed_out_scenario_stops_the_worker(tokenizer, tmp_path):
    scenarios = [_scenario("slow", prompts=40, output_len=200), _scenario("next")]
    with start_subprocess(["--time-scale", "1.0", *PROFILE]) as emu:
        _run(emu.base_url, tokenizer, tmp_path, scenarios, worker=True, timeout_s={"slow": 3, "default": 300})
    rows = {r["scenario"]: r for r in read_jsonl(tmp_path / "bench.jsonl")}
    assert rows["slow"]["status"] == "failed" and "timed out after 3 s" in rows["slow"]["error"]
    assert rows["next"]["status"] == "ok"
    assert not _workers()  # nothing left running


def test_a_python_without_sglang_is_reported_unavailable(tmp_path):
    worker = BenchWorker(sys.executable, dict(os.environ), RunFolder.create(tmp_path / "run"))
    with pytest.raises(WorkerUnavailable, match="sglang"):
        worker.run(["--help"], tmp_path / "run" / "logs" / "x.log", 60)
    assert worker.unavailable and "sglang" in worker.unavailable


def test_token_checks_run_in_the_same_worker(tokenizer, tmp_path, monkeypatch):
    """The token probe (one request per scenario) runs inside the stage's worker: one start for
    the probe and both scenarios, and the counts are verified."""
    starts: list[int] = []
    original = BenchWorker._open

    def counted(self):
        starts.append(1)
        return original(self)

    monkeypatch.setattr(BenchWorker, "_open", counted)
    with start_subprocess(["--time-scale", "1.0", *PROFILE]) as emu:
        speed.run_scenarios(
            [_scenario("t-a"), _scenario("t-b")], _handle(emu.base_url), RunFolder.create(tmp_path),
            tokenizer=tokenizer, offline=True, devices=8, platform="h200", progress=False, sample_metrics=False,
        )  # fmt: skip
    rows = read_jsonl(tmp_path / "bench.jsonl")
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert all(r["tokens"]["verified"] is True for r in rows), [r["tokens"] for r in rows]
    assert len(starts) == 1 and (tmp_path / "logs" / "token-probe.log").exists()


def test_a_runbooks_shared_worker_serves_the_stage_and_stops_with_the_run(tokenizer, tmp_path, monkeypatch):
    """The runbook starts the worker before its stages (shared_worker.start); the speed stage
    connects to it instead of importing sglang again, and stop() leaves nothing behind."""
    from kimi_runbooks.speed import shared_worker

    folder = RunFolder.create(tmp_path / "run")
    shared = shared_worker.start(folder, offline=True)
    assert shared is not None

    def no_spawn(self):
        raise AssertionError("the stage started a worker of its own instead of using the runbook's")

    monkeypatch.setattr(BenchWorker, "_spawn", no_spawn)
    try:
        with start_subprocess(["--time-scale", "1.0", *PROFILE]) as emu:
            _run(emu.base_url, tokenizer, folder, [_scenario("s-a"), _scenario("s-b")], worker=True)
    finally:
        shared.stop()
    rows = read_jsonl(folder.bench)
    assert [r["status"] for r in rows] == ["ok", "ok"], [r.get("error") for r in rows]
    assert not (folder.path / shared_worker.SHARED_FILE).exists()
    assert not os.path.exists(shared.description["socket"])
    shared.proc.wait(timeout=10)
    assert shared_worker.find(folder, shared.description["python"], True) is None


def test_a_killed_shared_worker_fails_its_scenario_as_died_not_timed_out(tokenizer, tmp_path):
    """Killed with SIGKILL, the runbook's worker stays a zombie (the runbook reaps it later): the end
    of its output, not its pid, says it died. The scenario names that, the next one runs in a worker
    of the stage's own."""
    from kimi_runbooks.speed import shared_worker

    folder = RunFolder.create(tmp_path / "run")
    shared = shared_worker.start(folder, offline=True)
    assert shared is not None
    log = folder.logs / "bench-crash.log"

    def kill_when_running() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if log.exists() and "/40 [" in log.read_text(errors="replace"):
                os.killpg(shared.proc.pid, signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_running, daemon=True)
    try:
        with start_subprocess(["--time-scale", "1.0", *PROFILE]) as emu:
            killer.start()
            _run(
                emu.base_url,
                tokenizer,
                folder,
                [_scenario("crash", prompts=40, output_len=64), _scenario("after")],
            )
    finally:
        shared.stop()
    rows = {r["scenario"]: r for r in read_jsonl(folder.bench)}
    assert rows["crash"]["status"] == "failed" and "BenchWorkerFailed" in rows["crash"]["error"]
    assert "timed out" not in rows["crash"]["error"]
    assert rows["after"]["status"] == "ok", rows["after"].get("error")
