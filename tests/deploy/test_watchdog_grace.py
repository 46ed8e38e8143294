"""Issue 40 item 1: once the runbook is gone, the watchdog stops what is left of the run quickly
enough that nothing runs 10 s after the kill, even a server and a bench client that ignore SIGTERM
(the launchers' 10 s grace and the sweep's 5 s used to add up to 16 s and more)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kimi_runbooks.deploy import watchdog
from kimi_runbooks.deploy.logpump import is_pump, start_pumped
from kimi_runbooks.procs import RUN_TOKEN_ENV, cmdline, group_alive, process_alive, start_ticks
from kimi_runbooks.rundir import RunFolder, now_iso

pytestmark = pytest.mark.slow  # real processes that ignore SIGTERM: a few seconds

DEAF = ["sh", "-c", 'trap "" TERM; while :; do sleep 1; done']
"""A process that ignores SIGTERM (its `sleep` inherits the ignored signal)."""
DETECT_S = 1.0
"""ipykernel's parent poller: the runbook's kernel ends within a second of papermill's end."""


def _members(pgid: int) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        try:
            count += entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == pgid
        except (OSError, IndexError, ValueError):
            continue
    return count


@pytest.fixture
def deaf_groups() -> Iterator[list[int]]:
    started: list[int] = []
    yield started
    for pgid in started:
        if group_alive(pgid):
            os.killpg(pgid, signal.SIGKILL)
        try:
            os.waitpid(pgid, 0)
        except ChildProcessError:
            pass


def test_the_watchdog_stops_a_run_that_ignores_sigterm_within_the_10_s(run_folder: RunFolder, deaf_groups) -> None:
    token = "f" * 32
    server = start_pumped(DEAF, dict(os.environ), run_folder.server_log, None)  # the pump forwards SIGTERM
    deaf_groups.append(server.pid)
    client = subprocess.Popen(DEAF, env={**os.environ, RUN_TOKEN_ENV: token}, start_new_session=True)
    deaf_groups.append(client.pid)
    deadline = time.monotonic() + 20
    while not (is_pump(cmdline(server.pid)) and _members(server.pid) >= 3):  # the pump, sh and its sleep
        assert time.monotonic() < deadline, "the pump did not start its server"
        time.sleep(0.02)
    time.sleep(0.2)  # the pump forwards SIGTERM from here on (a pump killed while it starts dies at once)
    run_folder.save_json(
        run_folder.process,
        {"launcher": "emulator", "pid": server.pid, "pgid": server.pid, "pgid_ticks": start_ticks(server.pid)},
    )
    run_folder.append_jsonl(run_folder.stages, {"stage": "speed", "status": "running", "started_at": now_iso()})

    started = time.monotonic()
    done = watchdog.act(run_folder, owner=os.getpid(), token=token)
    took = time.monotonic() - started
    print(f"the watchdog stopped a run deaf to SIGTERM in {took:.1f} s")

    assert not group_alive(server.pid) and not process_alive(client.pid)
    assert f"stopped process group {server.pid}" in done[0] and str(client.pid) in "; ".join(done)
    assert DETECT_S + took < 10.0 - 1.0, f"{took:.1f} s: with the runbook kernel's end, close to 10 s or over"
