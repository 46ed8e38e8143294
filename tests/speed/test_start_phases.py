"""Issue 28 item 6: the speed stage's start-up is recorded phase by phase, and a speed notebook run
alone starts its bench worker in its first cell, the token check and bench_serving sharing it and
its tokenizer. Behaviour only: how long the phases take is benchmarks/speed_startup.py's job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.procs import process_alive
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed import shared_worker
from kimi_runbooks.speed.benchenv import default_bench_python
from kimi_runbooks.speed.start_phases import PHASES, mark, marks, process_start_time
from kimi_runbooks.tools.scripts import script


def test_a_mark_is_a_progress_event_and_marks_reads_them_in_order(tmp_path):
    folder = RunFolder.create(tmp_path / "run")
    mark(folder, "token-check", scenarios=2)
    mark(folder, "kernel-start", at=123.5)
    rows = read_jsonl(folder.file(RunFolder.PROGRESS))
    assert rows[0]["stage"] == "speed" and rows[0]["key"] == "startup" and rows[0]["scenarios"] == 2
    assert rows[0]["message"] == "start-up: token check started"  # what a runbook relays
    assert rows[1]["t"] == 123.5  # a phase that happened earlier keeps its own time
    assert [p for p, _ in marks(folder)] == ["token-check", "kernel-start"]
    with pytest.raises(ValueError, match="unknown start-up phase 'warm'. Fix: one of kernel-start"):
        mark(folder, "warm")
    mark(None, "token-check")  # no run folder (a stage used outside one): nothing recorded, no error


def test_the_process_start_time_is_this_process_s():
    started = process_start_time()
    if started is None:
        pytest.skip("no /proc on this system")
    assert started <= time.time() and time.time() - started < 24 * 3600


def test_prestart_starts_nothing_for_a_command_prefix_or_another_python(tmp_path):
    folder = RunFolder.create(tmp_path / "run")
    said = shared_worker.prestart(folder, command_prefix=["docker", "exec", "sglang"])
    assert "not started early" in said and "command_prefix" in said
    said = shared_worker.prestart(folder, bench_python="/opt/other/python")
    assert "not started early" in said
    assert "worker-start" not in [p for p, _ in marks(folder)]
    assert not folder.file(shared_worker.SHARED_FILE).exists()


def test_prestart_uses_a_runbooks_worker_instead_of_starting_one(tmp_path, monkeypatch):
    folder = RunFolder.create(tmp_path / "run")
    python = default_bench_python()
    running = {"socket": str(tmp_path / "s.sock"), "pid": os.getpid(), "pgid": os.getpgrp(), "python": python}
    folder.save_json(folder.file(shared_worker.SHARED_FILE), {**running, "offline": True})

    def no_start(*a, **k):
        raise AssertionError("a second worker was started beside the runbook's")

    monkeypatch.setattr(shared_worker, "start", no_start)
    assert "using the one already running" in shared_worker.prestart(folder, offline=True)
    rows = [r for r in read_jsonl(folder.file(RunFolder.PROGRESS)) if r.get("phase") == "worker-start"]
    assert rows and rows[0]["shared"] is True


@pytest.mark.heavy
def test_the_worker_loads_each_tokenizer_once_for_the_probe_and_every_benchmark(require_tool_env, tmp_path):
    """In the bench worker, SGLang's get_tokenizer (bench_serving's and token_probe.py's) returns
    the tokenizer it loaded before, and loads again once the tokenizer's files change."""
    from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer

    env = require_tool_env("bench")
    tok = make_offline_tokenizer(tmp_path / "tok", env=env)
    code = f"""
import importlib.util, json, os, sys, time
spec = importlib.util.spec_from_file_location("bench_worker", {str(script("bench_worker.py"))!r})
worker = importlib.util.module_from_spec(spec); spec.loader.exec_module(worker)
serving, _ = worker._load()
import sglang.benchmark.utils as utils
probe = importlib.util.spec_from_file_location("token_probe", {str(script("token_probe.py"))!r})
token_probe = importlib.util.module_from_spec(probe); probe.loader.exec_module(token_probe)
a = serving.get_tokenizer({str(tok)!r})
b = token_probe.get_tokenizer({str(tok)!r})
os.utime(os.path.join({str(tok)!r}, "tokenizer.json"), (time.time() + 5, time.time() + 5))
c = utils.get_tokenizer({str(tok)!r})
print(json.dumps({{"same": a is b, "reloaded": c is not a, "encodes": a.encode("hello") == c.encode("hello")}}))
"""
    proc = subprocess.run([str(env.python), "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"same": True, "reloaded": True, "encodes": True}


@pytest.mark.heavy
def test_the_notebook_alone_records_its_start_up_in_order_and_leaves_no_worker(require_tool_env, tmp_path):
    """papermill notebooks/speed_bench.ipynb against a running server, as the README shows: the
    first cell starts the bench worker, every start-up phase is recorded once and in order, the
    token check still verifies the counts, and the worker stops with the kernel."""
    from kimi_runbooks.emulator.testing import start_subprocess
    from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer

    tok = make_offline_tokenizer(tmp_path / "tok", env=require_tool_env("bench"))
    run_dir = tmp_path / "run"
    papermill = str(Path(sys.executable).with_name("papermill"))
    with start_subprocess(["--time-scale", "0.05"]) as emu:
        argv = [papermill, str(REPO_ROOT / "notebooks" / "speed_bench.ipynb"), str(tmp_path / "out.ipynb")]
        argv += ["-p", "run_dir", str(run_dir), "-p", "base_url", emu.base_url, "-p", "tokenizer", str(tok)]
        argv += ["-y", "scenarios: [smoke-random-ids-c1]", "--no-progress-bar"]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    recorded = marks(RunFolder(run_dir))
    assert [p for p, _ in recorded] == list(PHASES)
    times = [t for _, t in recorded]
    assert times == sorted(times), recorded
    ready = next(r for r in read_jsonl(run_dir / "progress.jsonl") if r.get("phase") == "worker-ready")
    assert ready["shared"] is True  # the stage connected to the worker its first cell started
    rows = read_jsonl(run_dir / "bench.jsonl")
    assert [r["status"] for r in rows] == ["ok"] and rows[0]["tokens"]["verified"] is True
    assert not (run_dir / shared_worker.SHARED_FILE).exists()  # stopped when the kernel exited
    started = next(r for r in read_jsonl(run_dir / "progress.jsonl") if r.get("phase") == "worker-start")
    assert started["by"] == "kernel"  # the notebook's kernelspec started it before ipykernel loaded
    deadline = time.monotonic() + 30
    while process_alive(started["pid"]) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not process_alive(started["pid"])


def test_prestart_hands_the_kernels_worker_to_the_stage(tmp_path, monkeypatch):
    """The speed kernelspec's kernel started the worker (execution/prewarm.py): the first cell
    writes its description into the run folder, where run_scenarios looks, dated when it started."""
    from kimi_runbooks.execution.prewarm import WORKER_ENV

    folder = RunFolder.create(tmp_path / "run")
    described = {"socket": "s", "pid": os.getpid(), "pgid": os.getpgrp(), "python": default_bench_python()}
    monkeypatch.setenv(WORKER_ENV, json.dumps({**described, "offline": True, "started_at": 100.0}))
    monkeypatch.setattr(shared_worker, "start", lambda *a, **k: pytest.fail("started a second worker"))
    assert "started with the kernel" in shared_worker.prestart(folder, offline=True)
    assert shared_worker.find(folder, default_bench_python(), True)["pgid"] == os.getpgrp()
    row = next(r for r in read_jsonl(folder.file(RunFolder.PROGRESS)) if r.get("phase") == "worker-start")
    assert row["t"] == 100.0 and row["by"] == "kernel"


@pytest.mark.parametrize("stage", [{"offline": False}, {"command_prefix": ["docker", "exec", "sglang"]}])
def test_a_kernels_worker_the_stage_cannot_use_is_stopped(tmp_path, monkeypatch, stage):
    from kimi_runbooks.execution.prewarm import WORKER_ENV

    folder = RunFolder.create(tmp_path / "run")
    other = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        described = {"socket": "s", "pid": other.pid, "pgid": other.pid, "python": default_bench_python()}
        monkeypatch.setenv(WORKER_ENV, json.dumps({**described, "offline": True, "started_at": 1.0}))
        monkeypatch.setattr(shared_worker, "start", lambda *a, **k: None)  # (no bench env: nothing else starts)
        shared_worker.prestart(folder, **stage)
        assert other.wait(timeout=10) != 0  # stopped: its imports would only have taken CPU
        assert not folder.file(shared_worker.SHARED_FILE).exists()
    finally:
        other.kill()
