"""Issue 13 case 1: a runbook killed from outside leaves nothing running, and what a run could not
stop is remembered (registry) and stopped by `kimi-runbooks teardown` or by the next run.

The papermill process of a runbook is sent SIGTERM (as CI or `timeout` does) or SIGKILL while
SGLang's bench_serving runs in the speed stage: the kernel running the runbook dies without
Python-level handlers (ipykernel's parent poller calls os._exit), so only the watchdog can stop
the server, the bench client and the stage kernels."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kimi_runbooks import cli, deploy, runbook
from kimi_runbooks.deploy import registry
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import plan
from kimi_runbooks.procs import group_alive, process_alive, processes_with_token
from kimi_runbooks.rundir import RunFolder, read_jsonl

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

SETTLE_S = 20.0
"""'A few seconds': the kernel notices papermill is gone within ~1 s, then the watchdog stops
the server (SIGTERM, up to 10 s grace) and sweeps the rest."""


def _wait(condition, timeout: float, what: str, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the runbook ended before {what} (exit {proc.returncode})")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def _papermill(run: Path, out: Path, stages: str, time_scale: float) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "papermill",
            str(REPO_ROOT / "runbooks" / "h200.ipynb"),
            str(out),
            "-p",
            "run_dir",
            str(run),
            "-p",
            "time_scale",
            str(time_scale),
            "-y",
            f"stages: {stages}",
        ],
        start_new_session=True,  # the test's own cleanup can target this group only
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _processes_mentioning(run: Path) -> list[str]:
    """Command lines on this machine that name the run folder (server pump, bench client, ...)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(run) in argv:
            found.append(f"{entry.name}: {argv[:200]}")
    return found


def _run_token(run: Path) -> str:
    return str(json.loads((run / RunFolder.RUNBOOK).read_text())["run_token"])


def _bench_running(run: Path) -> bool:
    """A scenario's log exists (the runbook's bench worker keeps its own log from the start)."""
    logs = (run / "logs").glob("bench-*.log") if (run / "logs").is_dir() else []
    return any(p.name != "bench-worker.log" for p in logs)


@pytest.mark.heavy
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killing_papermill_mid_speed_stage_leaves_no_process_of_the_run(tmp_path, signum, require_tool_env):
    require_tool_env("bench")
    run = tmp_path / "run"
    proc = _papermill(run, tmp_path / "out.ipynb", "[deploy, speed, report]", 0.05)
    try:
        _wait(lambda: _bench_running(run), 240, "bench_serving to start", proc)
        time.sleep(1.0)  # bench_serving is sending requests
        token = _run_token(run)
        pgid = json.loads((run / RunFolder.PROCESS).read_text())["pgid"]
        assert group_alive(pgid) and processes_with_token(token)
        assert registry.get(run) is not None  # the live server is registered
        watchdog_pid = json.loads((run / RunFolder.LOCK_HOLDER).read_text())["watchdog_pid"]
        proc.send_signal(signum)  # the papermill process only, as `timeout` or CI would
        proc.wait(timeout=30)
        killed_at = time.monotonic()
        _wait(
            lambda: not processes_with_token(token) and not group_alive(pgid) and not process_alive(watchdog_pid),
            SETTLE_S,
            "the run to be stopped",
        )
        print(f"everything of the run stopped {time.monotonic() - killed_at:.1f} s after {signum.name}")
        assert _processes_mentioning(run) == []
        rows = read_jsonl(run / RunFolder.STAGES)
        teardown = [r for r in rows if r.get("stage") == "teardown"]
        assert teardown and "watchdog" in teardown[-1]["detail"], rows
        assert f"stopped process group {pgid}" in teardown[-1]["detail"]
        assert [r["status"] for r in rows if r.get("stage") == "speed"][-1] == "interrupted"
        assert registry.get(run) is None  # nothing left to remember
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        deploy.teardown_run(run)


def _orphan(tmp_path: Path) -> tuple[Path, int]:
    """A run whose papermill AND watchdog were SIGKILLed mid-invoke: nothing stopped its server."""
    run = tmp_path / "orphaned"
    proc = _papermill(run, tmp_path / "out.ipynb", "[deploy, invoke]", 1.0)
    try:
        _wait(
            lambda: any(r.get("stage") == "invoke" for r in read_jsonl(run / RunFolder.STAGES)),
            180,
            "the invoke stage",
            proc,
        )
        watchdog_pid = json.loads((run / RunFolder.LOCK_HOLDER).read_text())["watchdog_pid"]
        os.kill(watchdog_pid, signal.SIGKILL)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    pgid = json.loads((run / RunFolder.PROCESS).read_text())["pgid"]
    entry = registry.get(run)
    assert entry is not None and entry.pgid == pgid
    _wait(lambda: not entry.owner_alive(), 10, "the runbook's kernel to end")
    assert group_alive(pgid), "the server should be orphaned here (its watchdog was killed too)"
    return run, pgid


def test_teardown_all_stops_an_orphaned_server_and_says_so(tmp_path, capsys):
    run, pgid = _orphan(tmp_path)
    try:
        assert cli.main(["teardown", "--all"]) == 0
        out = capsys.readouterr().out
        assert "stopped 1 orphaned server(s)" in out and str(run) in out and f"process group {pgid}" in out
        assert not group_alive(pgid)
        assert registry.get(run) is None
        assert "orphaned" in read_jsonl(run / RunFolder.STAGES)[-1]["detail"]
    finally:
        deploy.teardown_run(run)


def test_the_next_run_stops_an_orphaned_server_and_says_so(tmp_path, capsys):
    run, pgid = _orphan(tmp_path)
    try:
        runbook.run_runbook(
            {"platform": "h200", "stages": ["deploy"], "time_scale": 0.05, "run_dir": str(tmp_path / "next")}
        )
        out = capsys.readouterr().out
        assert "stopped 1 orphaned server(s) from earlier runs" in out and str(run) in out
        assert not group_alive(pgid)
    finally:
        deploy.teardown_run(run)


def test_a_second_launch_in_a_folder_stops_and_remembers_the_first_server(tmp_path, capsys):
    folder = tmp_path / "run"
    launch_plan = plan({"platform": "h200"})
    first = deploy.launch(launch_plan, "emulator", folder, progress=False, options={"time_scale": 0.05})
    first.detach()  # left running, as a deploy notebook with keep_running does
    second = deploy.launch(launch_plan, "emulator", folder, progress=True, options={"time_scale": 0.05})
    try:
        assert f"stopped process group {first.pgid}" in capsys.readouterr().out
        assert not group_alive(first.pgid)
        record = json.loads((folder / RunFolder.PROCESS).read_text())
        assert record["pgid"] == second.pgid
        assert [p["pgid"] for p in record["previous"]] == [first.pgid]
    finally:
        second.stop()


def test_teardown_of_a_run_folder_and_the_listing(tmp_path, capsys):
    folder = tmp_path / "run"
    handle = deploy.launch(plan({"platform": "h200"}), "emulator", folder, progress=False, options={"time_scale": 0.05})
    handle.detach()
    deploy.finish(handle, keep_running=True)  # no runbook around: detached on purpose
    entry = registry.get(folder)
    assert entry is not None and entry.detached
    assert cli.main(["teardown"]) == 0
    assert "detached" in capsys.readouterr().out
    assert cli.main(["teardown", str(folder)]) == 0
    assert f"stopped process group {handle.pgid}" in capsys.readouterr().out
    assert not group_alive(handle.pgid) and registry.get(folder) is None


def test_a_registry_entry_of_a_deleted_run_folder_is_still_stopped(tmp_path, capsys):
    import shutil

    folder = tmp_path / "run"
    handle = deploy.launch(plan({"platform": "h200"}), "emulator", folder, progress=False, options={"time_scale": 0.05})
    handle.detach()
    entry = registry.get(folder)
    assert entry is not None
    gone = subprocess.Popen(["true"])
    gone.wait()
    entry.owner = f"{gone.pid}:1"  # an owner that has ended
    registry._save(entry)
    shutil.rmtree(folder)
    assert cli.main(["teardown", "--all"]) == 0
    assert f"process group {handle.pgid}" in capsys.readouterr().out
    assert not group_alive(handle.pgid)
