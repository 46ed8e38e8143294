"""Every log redacted even when its writer was killed (issue 25 item 12).

Each case runs real processes and ends one of them with SIGKILL mid-write; the run folder must then
hold no byte of the key unredacted:

* the process that holds RunFolder.open_log is killed while its child still writes through it (a
  stage kernel killed while bench_serving runs): the log used to be the child's own file, redacted
  only when the block closed, which a SIGKILL never reaches;
* a writer on RunFolder.redacting_writer (the watchdog's log, the server log pump) killed between
  the two halves of a key written in two pieces, and with a key's start unfinished on its last line;
* the watchdog itself, acting after its runbook was SIGKILLed: it wrote its log raw, and only the
  runbook (gone) would have redacted it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kimi_runbooks.rundir import RunFolder

KEY_ENV = "KIMI_TEST_KILLED_KEY"
KEY = "sk-killed-0123456789abcdef"


def _run_python(code: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _no_key_in(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data, f"{path} holds the key"
            assert KEY[:12].encode() not in data, f"{path} holds the start of the key"


def test_a_log_stays_redacted_when_its_holder_is_killed_while_the_child_writes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    RunFolder.create(run, secret_envs=[KEY_ENV])
    child = (
        "import os, time\n"
        f"for i in range(200):\n    print(i, os.environ[{KEY_ENV!r}], flush=True)\n    time.sleep(0.01)"
    )
    holder = f"""
        import os, signal, subprocess, sys, time
        from kimi_runbooks.rundir import RunFolder
        folder = RunFolder({str(run)!r})
        with folder.open_log(folder.logs / "bench-x.log") as out:
            proc = subprocess.Popen([sys.executable, "-c", {child!r}], stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            print(proc.pid, flush=True)
            time.sleep(0.8)  # the child is writing
            os.kill(os.getpid(), signal.SIGKILL)
    """
    proc = _run_python(holder, {KEY_ENV: KEY})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    child_pid = int(proc.stdout.split()[0])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the child finishes or dies on its broken pipe
        try:
            os.kill(child_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    log = (run / "logs" / "bench-x.log").read_text()
    assert "<redacted>" in log  # what got through before the kill, redacted
    _no_key_in(run)


def test_a_redacting_writer_killed_mid_key_leaves_no_part_of_it(tmp_path: Path) -> None:
    run = tmp_path / "run"
    RunFolder.create(run, secret_envs=[KEY_ENV])
    writer = f"""
        import os, signal, sys
        from kimi_runbooks.rundir import RunFolder
        folder = RunFolder({str(run)!r})
        key = os.environ[{KEY_ENV!r}]
        with folder.redacting_writer(folder.logs / "watchdog.log") as log:
            sys.stdout = log
            print("whole:", key)
            sys.stdout.write("split: " + key[:10])  # one key, two writes
            sys.stdout.write(key[10:] + "\\n")
            sys.stdout.write("unfinished: " + key[:14])  # killed before the rest and the line's end
            os.kill(os.getpid(), signal.SIGKILL)
    """
    proc = _run_python(writer, {KEY_ENV: KEY})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    log = (run / "logs" / "watchdog.log").read_text()
    assert log == "whole: <redacted>\nsplit: <redacted>\n"
    _no_key_in(run)


@pytest.mark.slow
def test_the_watchdogs_log_is_redacted_after_its_runbook_is_killed(tmp_path: Path) -> None:
    """The key is a phrase the watchdog prints when it acts, so its log must show it redacted."""
    phrase = "is gone without a teardown"
    run = tmp_path / "run"
    RunFolder.create(run, secret_envs=[KEY_ENV])
    owner = f"""
        import os, signal, time
        from kimi_runbooks.deploy.watchdog import Watchdog
        from kimi_runbooks.rundir import RunFolder
        dog = Watchdog.start(RunFolder({str(run)!r}), "tok-killed-owner")
        print(dog.pid, flush=True)
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)
    """
    proc = _run_python(owner, {KEY_ENV: phrase})
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    dog = int(proc.stdout.split()[0])
    log = run / "logs" / RunFolder.WATCHDOG_LOG
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "done:" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    text = log.read_text()
    assert "done:" in text, text  # it acted
    assert "runbook process" in text and "<redacted>" in text and phrase not in text
    try:
        os.kill(dog, 0)
    except ProcessLookupError:
        pass
