"""Execute a notebook with papermill, its kernel talking over Unix sockets instead of TCP.

A run starts servers and benchmark clients on ephemeral TCP ports; a kernel on TCP ports of its
own can collide with them (seen as a client waiting forever for a reply that went elsewhere), and
every TCP kernel logs "running over TCP without encryption" into the run's output. IPC sockets in
a private temporary folder avoid both.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

from jupyter_client.manager import AsyncKernelManager


class IPCKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel listens on IPC sockets under the temporary folder."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("ip", os.path.join(tempfile.gettempdir(), f"kimi-kernel-{uuid.uuid4().hex[:16]}"))
        super().__init__(**kwargs)


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
    save_each_cell: bool = True,
) -> Any:
    """papermill.execute_notebook on an IPC kernel; `execution_timeout` bounds each cell (None: none).
    `save_each_cell` writes the executed copy after every cell (a stage that hangs can be read
    while it runs); the report, quick and re-renderable, skips it (~1 s with its plotly bundle)."""
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
        request_save_on_cell_execute=save_each_cell,
    )
