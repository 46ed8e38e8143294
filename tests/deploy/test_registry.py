"""Issue 40 item 2: the server registry is per checkout, and a record that cannot be read (a
process.json or a registry entry cut short) is reported by name and skipped, never a traceback,
in `kimi-runbooks teardown --all` and at a runbook's start."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks import cli, runbook
from kimi_runbooks.deploy import registry
from kimi_runbooks.deploy.logpump import is_pump, start_pumped
from kimi_runbooks.deploy.teardown import stop_orphans
from kimi_runbooks.procs import RUN_TOKEN_ENV, cmdline, group_alive, process_alive, start_ticks
from kimi_runbooks.rundir import RunFolder, now_iso

CUT_SHORT = '{"launcher": "emulator", "pid": 12'


@dataclass
class _Started:
    """What registry.record reads of a server just started."""

    run_dir: Path
    record: dict[str, Any]

    def process_record(self) -> dict[str, Any]:
        return self.record


@dataclass
class Orphan:
    folder: RunFolder
    pgid: int


@pytest.fixture
def ended_owner(monkeypatch: pytest.MonkeyPatch) -> str:
    """The registry's owner of the next recorded server: a process that has ended (an orphan's)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    token = f"{gone.pid}:1"
    monkeypatch.setenv(registry.OWNER_ENV, token)
    return token


def _start_orphan(run: Path, run_token: str | None = None) -> Orphan:
    """A server whose runbook is gone: a log pump (its group's leader, as the emulator's) running
    `sleep`, recorded in the run folder's process.json and in the registry."""
    folder = RunFolder.create(run)
    proc = start_pumped(["sleep", "600"], dict(os.environ), folder.server_log, None)
    deadline = time.monotonic() + 20
    while not is_pump(cmdline(proc.pid)):
        assert time.monotonic() < deadline, "the pump did not start"
        time.sleep(0.02)
    record = {
        "launcher": "emulator",
        "pid": proc.pid,
        "pgid": proc.pid,
        "pgid_ticks": start_ticks(proc.pid),
        "started_at": now_iso(),
    }
    folder.save_json(folder.process, record)
    registry.record(_Started(folder.path, record), run_token=run_token)
    return Orphan(folder, proc.pid)


@pytest.fixture
def orphans(ended_owner: str) -> Iterator[list[Orphan]]:
    """Start orphans with `_start_orphan` and append them here; any still running is killed after."""
    started: list[Orphan] = []
    yield started
    for orphan in started:
        if group_alive(orphan.pgid):
            os.killpg(orphan.pgid, signal.SIGKILL)
        try:
            os.waitpid(orphan.pgid, 0)
        except ChildProcessError:
            pass


def test_teardown_all_reports_a_cut_short_process_json_and_still_stops_its_server(tmp_path, orphans, capsys):
    orphan = _start_orphan(tmp_path / "run")
    orphans.append(orphan)
    orphan.folder.process.write_text(CUT_SHORT)  # as a kill mid-write left it before writes were atomic
    assert cli.main(["teardown", "--all"]) == 0
    out = capsys.readouterr().out
    assert f"skipped process.json: {orphan.folder.process} is not readable JSON" in out, out
    assert f"stopped process group {orphan.pgid}" in out  # the registry still said what to stop
    assert not group_alive(orphan.pgid)
    assert registry.get(orphan.folder.path) is None


def test_a_runbook_start_reports_a_cut_short_process_json_and_goes_on(tmp_path, orphans, capsys, monkeypatch):
    orphan = _start_orphan(tmp_path / "orphaned")
    orphans.append(orphan)
    orphan.folder.process.write_text(CUT_SHORT)
    monkeypatch.setattr(runbook.run, "_run_stages", lambda *args: {})  # the start is what is tested
    runbook.run_runbook({"platform": "h200", "stages": ["deploy"], "run_dir": str(tmp_path / "next")})
    out = capsys.readouterr().out
    assert "skipped 1 unreadable record(s)" in out and f"{orphan.folder.process} is not readable JSON" in out
    assert f"stopped process group {orphan.pgid}" in out
    assert not group_alive(orphan.pgid)


def test_an_unreadable_registry_entry_is_reported_by_path_and_skipped(tmp_path, orphans, capsys):
    orphan = _start_orphan(tmp_path / "run")
    orphans.append(orphan)
    bad = registry.registry_dir() / "0123456789abcdef.json"
    bad.write_text(CUT_SHORT)
    try:
        swept = stop_orphans()
        assert [s for s in swept.skipped if str(bad) in s and "unreadable" in s], swept
        assert not group_alive(orphan.pgid)  # the readable one is still stopped
        assert cli.main(["teardown"]) == 0
        assert f"registry entry {bad} is unreadable" in capsys.readouterr().out
    finally:
        bad.unlink()


def test_one_checkouts_teardown_never_stops_another_checkouts_servers(tmp_path, orphans, capsys, monkeypatch):
    other = tmp_path / "other-checkout"
    with monkeypatch.context() as as_other:
        as_other.setattr(registry, "REPO_ROOT", other, raising=False)  # the other checkout registers it
        theirs = _start_orphan(tmp_path / "theirs")
    orphans.append(theirs)
    ours = _start_orphan(tmp_path / "ours")
    orphans.append(ours)

    assert cli.main(["teardown", "--all"]) == 0
    out = capsys.readouterr().out
    assert not group_alive(ours.pgid) and f"process group {ours.pgid}" in out
    assert group_alive(theirs.pgid), "this checkout stopped another checkout's server"
    assert "1 server(s) registered by other checkouts, not stopped from here" in out
    assert str(theirs.folder.path) in out and f"[checkout {other}]" in out

    monkeypatch.setattr(registry, "REPO_ROOT", other, raising=False)  # from the other checkout it is stopped
    assert cli.main(["teardown", "--all"]) == 0
    assert f"process group {theirs.pgid}" in capsys.readouterr().out
    assert not group_alive(theirs.pgid)


def test_a_run_folder_named_by_path_is_torn_down_whichever_checkout_registered_it(tmp_path, orphans, capsys):
    orphan = _start_orphan(tmp_path / "run")
    orphans.append(orphan)
    entry = registry.get(orphan.folder.path)
    assert entry is not None
    own = registry.registry_dir() / registry._key(orphan.folder.path)
    legacy = registry.registry_root() / own.name  # where entries were before registries were per checkout
    old_format = {k: v for k, v in json.loads(own.read_text()).items() if k != "checkout"}
    legacy.write_text(json.dumps(old_format))
    own.unlink()
    try:
        found = registry.get(orphan.folder.path)
        assert entry not in registry.entries() and found is not None and found.pgid == orphan.pgid
        assert cli.main(["teardown"]) == 0
        assert "registered before registries were per checkout" in capsys.readouterr().out
        assert cli.main(["teardown", str(orphan.folder.path)]) == 0
        assert f"stopped process group {orphan.pgid}" in capsys.readouterr().out
        assert registry.get(orphan.folder.path) is None
    finally:
        legacy.unlink(missing_ok=True)


def test_an_orphans_other_processes_are_swept_by_the_token_the_registry_kept(tmp_path, orphans, capsys, monkeypatch):
    """The deploy stage registers its server with the run's token in its environment: the token is
    kept as it is (not redacted as if it were a credential), so the processes of the run (here a
    bench client) are found and stopped once their runbook is gone."""
    token = "0123456789abcdef0123456789abcdef"
    monkeypatch.setenv(RUN_TOKEN_ENV, token)  # as in every stage kernel of a runbook
    client = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        orphan = _start_orphan(tmp_path / "run", run_token=token)
        orphans.append(orphan)
        monkeypatch.delenv(RUN_TOKEN_ENV)
        assert registry.get(orphan.folder.path).run_token == token
        assert cli.main(["teardown", "--all"]) == 0
        assert f"(pids [{client.pid}])" in capsys.readouterr().out
        client.wait(timeout=10)
        assert not process_alive(client.pid)
    finally:
        client.kill()
        client.wait()
