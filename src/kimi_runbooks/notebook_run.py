"""Execute a notebook with papermill, its kernel talking over Unix sockets instead of TCP.

A run starts servers and benchmark clients on ephemeral TCP ports; a kernel on TCP ports of its
own can collide with them (seen as a client waiting forever for a reply that went elsewhere), and
every TCP kernel logs "running over TCP without encryption" into the run's output. IPC sockets in
a private temporary folder avoid both.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from jupyter_client.manager import AsyncKernelManager


class IPCKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel listens on IPC sockets under the temporary folder."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("ip", os.path.join(tempfile.gettempdir(), f"kimi-kernel-{uuid.uuid4().hex[:16]}"))
        super().__init__(**kwargs)


class LineRelay:
    """A file-like sink for papermill's `stdout_file`: each complete line the notebook prints is
    written at once to `out` (the runbook's own output) behind `prefix`, so a long wait inside a
    stage notebook shows its heartbeat in the terminal, not only in the executed notebook."""

    def __init__(self, prefix: str, out: IO[str] | None = None, redact: Callable[[str], str] | None = None) -> None:
        self.prefix, self.out, self._partial = prefix, out, ""
        self._redact = redact or (lambda text: text)

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        out = self.out or sys.stdout
        for line in lines:
            out.write(f"{self.prefix}{self._redact(line.rstrip())}\n")
        out.flush()
        return len(text)

    def flush(self) -> None:
        if self._partial:
            (self.out or sys.stdout).write(f"{self.prefix}{self._redact(self._partial.rstrip())}\n")
            self._partial = ""
        (self.out or sys.stdout).flush()


def execute_notebook(
    source: str | Path,
    dest: str | Path,
    *,
    parameters: dict[str, Any] | None = None,
    cwd: str | Path | None = None,
    kernel_name: str | None = None,
    execution_timeout: float | None = None,
    progress_bar: bool = False,
    log_output: bool = False,
    stdout_file: Any = None,
) -> Any:
    """papermill.execute_notebook on an IPC kernel; `execution_timeout` bounds each cell (None: none);
    `stdout_file` receives what the notebook prints, as it prints it (e.g. a LineRelay)."""
    import papermill as pm

    return pm.execute_notebook(
        str(source),
        str(dest),
        parameters=parameters or {},
        cwd=str(cwd) if cwd is not None else None,
        kernel_name=kernel_name,
        progress_bar=progress_bar,
        log_output=log_output,
        execution_timeout=execution_timeout,
        kernel_manager_class=IPCKernelManager,
        stdout_file=stdout_file,
    )
