"""Issue 13 case 1, issue 40 item 1: a runbook killed from outside leaves nothing running 10 s after
the kill, and what a run could not stop is remembered (registry) and stopped by `kimi-runbooks
teardown` or by the next run.

The papermill process of a runbook is sent SIGTERM (as CI or `timeout` does) or SIGKILL while a
stage runs (SGLang's bench_serving in the speed stage, the checks in the invoke stage), at time scale
0.05 and 1: the kernel running the runbook dies without Python-level handlers (ipykernel's parent
poller calls os._exit), so only the watchdog can stop the server, the bench client and the stage
kernels."""

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


KILL_CASES = {
    # the short rehearsal, killed while bench_serving runs
    "short-speed": ("[deploy, speed, report]", 0.05, "speed"),
    # time scale 1: the speed stage (after deploy; the invoke stage alone takes ~5 min at this scale)
    "ts1-speed": ("[deploy, speed, accuracy, report]", 1.0, "speed"),
    # the full runbook at time scale 1, killed in its second stage (killed in speed it also passes, in
    # 2.9 s after SIGTERM, but reaching speed takes ~5 min: measured by hand, not run here)
    "full-ts1-invoke": ("[deploy, invoke, speed, accuracy, report]", 1.0, "invoke"),
}
STOPPED_WITHIN_S = 10.0
"""Issue 40: nothing of a killed run runs 10 s after the kill, whatever the signal, stage or time scale."""


def _stage_running(run: Path, stage: str) -> bool:
    running = any(r.get("stage") == stage and r.get("status") == "running" for r in read_jsonl(run / RunFolder.STAGES))
    return running and (stage != "speed" or _bench_running(run))


def _left_of_run(run: Path, token: str, pids: dict[str, int], pgid: int) -> list[str]:
    """What of the run still runs: the runbook's kernel, its watchdog, the server's group, any process
    carrying the run's token or naming its folder."""
    left = [f"{name} (pid {pid})" for name, pid in pids.items() if process_alive(pid)]
    left += [f"server process group {pgid}"] if group_alive(pgid) else []
    left += [f"pid {p} carrying the run token" for p in processes_with_token(token)]
    return left + _processes_mentioning(run)


@pytest.mark.heavy
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
@pytest.mark.parametrize("case", list(KILL_CASES))
def test_killing_papermill_leaves_nothing_of_the_run_within_10_s(tmp_path, case, signum, require_tool_env):
    """The papermill process only is signalled, as `timeout` or CI would, as soon as the stage runs."""
    require_tool_env("bench")
    stages, time_scale, stage = KILL_CASES[case]
    run = tmp_path / "run"
    started = time.monotonic()
    proc = _papermill(run, tmp_path / "out.ipynb", stages, time_scale)
    try:
        _wait(lambda: _stage_running(run, stage), 300, f"the {stage} stage", proc)
        reached = time.monotonic() - started
        time.sleep(1.0)  # the stage is under way (bench_serving sending requests, checks in flight)
        token = _run_token(run)
        pgid = json.loads((run / RunFolder.PROCESS).read_text())["pgid"]
        holder = json.loads((run / RunFolder.LOCK_HOLDER).read_text())
        pids = {"runbook kernel": holder["pid"], "watchdog": holder["watchdog_pid"]}
        assert group_alive(pgid) and processes_with_token(token)
        assert registry.get(run) is not None  # the live server is registered
        proc.send_signal(signum)
        killed_at = time.monotonic()
        deadline = killed_at + STOPPED_WITHIN_S
        while (left := _left_of_run(run, token, pids, pgid)) and time.monotonic() < deadline:
            proc.poll()
            time.sleep(0.1)
        took = time.monotonic() - killed_at
        print(f"{case} {signum.name}: {stage} reached after {reached:.0f} s; nothing left {took:.1f} s after the kill")
        assert not left, f"{STOPPED_WITHIN_S:.0f} s after {signum.name}: still running: {left}"
        proc.wait(timeout=30)
        rows = read_jsonl(run / RunFolder.STAGES)
        teardown = [r for r in rows if r.get("stage") == "teardown"]
        assert teardown and "watchdog" in teardown[-1]["detail"], rows
        assert f"stopped process group {pgid}" in teardown[-1]["detail"]
        assert [r["status"] for r in rows if r.get("stage") == stage][-1] == "interrupted"
        assert registry.get(run) is None  # nothing left to remember
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        deploy.teardown_run(RunFolder.of(run))


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
        deploy.teardown_run(RunFolder.of(run))


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
        deploy.teardown_run(RunFolder.of(run))


QUICK = {"progress": False, "options": {"time_scale": 0.05}}


def test_a_second_launch_in_a_folder_stops_and_remembers_the_first_server(tmp_path, capsys):
    folder = tmp_path / "run"
    launch_plan = plan({"platform": "h200"})
    first = deploy.launch(
        launch_plan, "emulator", RunFolder.create(folder), progress=False, options={"time_scale": 0.05}
    )
    first.detach()  # left running, as a deploy notebook with keep_running does
    second = deploy.launch(launch_plan, "emulator", RunFolder(folder), progress=True, options={"time_scale": 0.05})
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
    handle = deploy.launch(
        plan({"platform": "h200"}), "emulator", RunFolder.create(folder), progress=False, options={"time_scale": 0.05}
    )
    handle.detach()
    said = deploy.finish(handle, keep_running=True)  # no runbook around: detached on purpose
    assert f"stop it with: kimi-runbooks teardown {folder}" in said  # the hint is the command run below
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
    handle = deploy.launch(
        plan({"platform": "h200"}), "emulator", RunFolder.create(folder), progress=False, options={"time_scale": 0.05}
    )
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
