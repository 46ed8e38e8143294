"""Issue 13 case 10: idle connections at the file-descriptor limit do not take /health down, the
emulator's log does not fill with one traceback per refused accept, and a wildcard bind without
a key is warned about."""

from __future__ import annotations

import logging
import resource
import socket
import time

import httpx
import pytest

from kimi_runbooks.emulator.limits import ErrorThrottle, bind_warning, connection_budget
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import start_subprocess

FD_LIMIT = 1024
IDLE_CONNECTIONS = 1100


def _limit_fds() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def _open_idle(port: int, count: int) -> list[socket.socket]:
    socks = []
    for i in range(count):
        if i % 50 == 0:
            time.sleep(0.1)  # paced, so the emulator really accepts them all (no SYN-queue overflow)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        socks.append(s)
    return socks


@pytest.mark.slow  # opens 1100 idle sockets against its own server process: ~15 s; make test-all and CI run it
def test_health_answers_with_more_idle_connections_than_file_descriptors(monkeypatch):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < IDLE_CONNECTIONS + 200:  # this test process holds the client ends
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    import subprocess

    original = subprocess.Popen

    def limited(*args, **kwargs):
        kwargs.setdefault("preexec_fn", _limit_fds)
        return original(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", limited)
    emulator = start_subprocess(["--time-scale", "0.01"])
    monkeypatch.setattr(subprocess, "Popen", original)
    socks: list[socket.socket] = []
    try:
        socks = _open_idle(emulator.port, IDLE_CONNECTIONS)
        time.sleep(2.0)  # the emulator accepts (and, at its budget, sheds) the idle ones
        start = time.monotonic()
        answer = httpx.get(emulator.base_url + "/health", timeout=5.0)
        assert answer.status_code == 200, answer.text
        assert time.monotonic() - start < 5.0
        time.sleep(8.0)  # what a flood of refused accepts would log in this time
        assert emulator.process.poll() is None
        log = emulator.stderr_text()
        assert len(log) < 100_000, f"{len(log)} bytes of log, e.g. {log[-500:]}"
        assert "Traceback" not in log
        assert "idle connection" in log  # the shedding is said once (throttled), not hidden
    finally:
        for s in socks:
            s.close()
        emulator.stop()


def test_connection_budget_leaves_room_for_files_and_the_listener():
    assert connection_budget(1024) < 1024 - 50
    assert connection_budget(1_000_000) <= 1_000_000
    assert connection_budget(64) >= 1


def test_the_same_error_is_logged_once_per_interval_with_a_count():
    clock = [0.0]
    throttle = ErrorThrottle(interval_s=10.0, clock=lambda: clock[0])
    message = "socket.accept() out of system resource"
    passed = []
    for _ in range(1000):
        record = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, (), None)
        if throttle.filter(record):
            passed.append(record.getMessage())
        clock[0] += 0.01  # 1000 in 10 s
    clock[0] += 1.0
    late = logging.LogRecord("asyncio", logging.ERROR, __file__, 1, message, (), None)
    assert throttle.filter(late)
    passed.append(late.getMessage())
    assert len(passed) == 2
    assert "999 more like it held back" in passed[1]
    other = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, "something else", (), None)
    assert throttle.filter(other)


def test_binding_every_interface_without_a_key_is_warned_about():
    assert "0.0.0.0" in (bind_warning(EmulatorSettings(host="0.0.0.0")) or "")
    assert bind_warning(EmulatorSettings(host="0.0.0.0", api_key="a-long-enough-key")) is None
    assert bind_warning(EmulatorSettings(host="127.0.0.1")) is None


def test_a_wildcard_bind_without_a_key_says_so_on_start():
    emulator = start_subprocess(["--time-scale", "0.01"], host="0.0.0.0")
    try:
        assert "0.0.0.0" in emulator.stderr_text() and "API key" in emulator.stderr_text()
    finally:
        emulator.stop()
