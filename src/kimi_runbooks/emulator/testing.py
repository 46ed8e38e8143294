"""Helpers to run an emulator from tests and other stages.

* ``run_in_thread(settings) -> (base_url, stop)``: uvicorn in a daemon thread of this
  process, on an ephemeral port; fast, shares nothing with other instances.
* ``emulator_server(**settings)``: the same as a context manager.
* ``start_subprocess(args)``: ``python -m kimi_runbooks.emulator`` on a free port,
  waiting for /health; needed for faults that end the process (crash-*).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from ..target.ports import free_port
from .app import create_app
from .settings import EmulatorSettings


def run_in_thread(
    settings: EmulatorSettings | None = None, port: int = 0, timeout: float = 10.0
) -> tuple[str, Callable[[], None]]:
    """Serve an emulator in a background thread; returns (base_url, stop).

    ``port=0`` (the default) takes an ephemeral port, whatever settings.port says.
    """
    settings = settings or EmulatorSettings()
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose
    # listener says so, and without it every keep-alive response waits ~40 ms (Nagle).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, port))
    port = sock.getsockname()[1]
    settings = dataclasses.replace(settings, port=port)
    config = uvicorn.Config(create_app(settings), log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=f"emulator-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("emulator thread failed to start")
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()

    return f"http://{settings.host}:{port}", stop


@contextlib.contextmanager
def emulator_server(settings: EmulatorSettings | None = None, **overrides: Any) -> Iterator[str]:
    """``with emulator_server(time_scale=0.01) as base_url: ...``"""
    if settings is None:
        settings = EmulatorSettings(**overrides)
    elif overrides:
        settings = dataclasses.replace(settings, **overrides)
    base_url, stop = run_in_thread(settings)
    try:
        yield base_url
    finally:
        stop()


@dataclasses.dataclass
class EmulatorProcess:
    """A running ``python -m kimi_runbooks.emulator`` child."""

    process: subprocess.Popen[bytes]
    base_url: str
    port: int
    stderr_path: Path

    def stderr_text(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout=timeout)

    def stop(self) -> None:
        """Terminate this child (and only it) and remove its log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.stderr_path.unlink()

    def __enter__(self) -> EmulatorProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_subprocess(
    args: Sequence[str] = (),
    host: str = "127.0.0.1",
    port: int | None = None,
    wait: bool = True,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    python: str | None = None,
) -> EmulatorProcess:
    """Launch the emulator CLI on a free port; by default wait until /health is 200.

    With ``wait=True`` a child that exits first raises RuntimeError carrying its stderr.
    """
    port = port or free_port(host)
    fd, name = tempfile.mkstemp(prefix="emulator-", suffix=".log")
    stderr = os.fdopen(fd, "w")
    cmd = [python or sys.executable, "-m", "kimi_runbooks.emulator", "--host", host, "--port", str(port), *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env={**os.environ, **(env or {})})
    stderr.close()
    handle = EmulatorProcess(proc, f"http://{host}:{port}", port, Path(name))
    if wait:
        try:
            wait_for_health(handle, timeout)
        except BaseException:
            handle.stop()
            raise
    return handle


def wait_for_health(handle: EmulatorProcess, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if handle.process.poll() is not None:
            raise RuntimeError(f"emulator exited with {handle.process.returncode}:\n{handle.stderr_text()[-2000:]}")
        try:
            if httpx.get(handle.base_url + "/health", timeout=1.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"emulator at {handle.base_url} not healthy after {timeout}s")
