"""Execute a notebook with papermill, its kernel talking over Unix sockets instead of TCP.

A run starts servers and benchmark clients on ephemeral TCP ports; a kernel on TCP ports of its
own can collide with them (seen as a client waiting forever for a reply that went elsewhere), and
every TCP kernel logs "running over TCP without encryption" into the run's output. IPC sockets in
a private temporary folder avoid both.

The client also waits for kernel messages in short slices. nbclient waits for a cell's reply with
one poll as long as the cell timeout; when a cell opens ipywidgets comms (the command generator,
the progress bar) that poll can miss the socket's wake-up and only see the reply, long there, when
the timeout ends (jupyter/nbclient issue 312: a 2 s cell took 15 min here in a CI run). A sliced
wait looks again every POLL_SLICE_S, so a missed wake-up costs at most that.

Shutting a kernel down does not interrupt it first. jupyter_client (8.x) sends SIGINT before its
shutdown request, and papermill shuts down right after the reply to its last kernel_info request,
while the kernel may still be inside that handler (SIGINT armed): it then logs "KeyboardInterrupt
caught in kernel" into the stage's output and lingers until SIGTERM. The notebook has finished by
then; the shutdown request, and jupyter_client's SIGTERM and SIGKILL after it, stop the kernel. An
interrupt asked for (nbclient's on a cell timeout) still goes through interrupt_kernel.

The executed copy, which papermill rewrites after every cell, is written atomically (rundir.atomic,
through a papermill I/O handler): a run killed while papermill saves leaves the previous copy, not
a cut-short notebook that the report and the next run cannot read.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.asynchronous.client import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from jupyter_client.manager import AsyncKernelManager
from traitlets import Type

from ..rundir.atomic import replace_text

POLL_SLICE_S = 0.25
"""Longest a reply that has arrived can go unseen (see the module docstring)."""


class SlicedWaitChannel(AsyncZMQSocketChannel):
    """A kernel channel whose get_msg(timeout) polls in POLL_SLICE_S slices up to the timeout."""

    async def get_msg(self, timeout: float | None = None) -> dict[str, Any]:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = POLL_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await super().get_msg(timeout=min(POLL_SLICE_S, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise


class SlicedWaitKernelClient(AsyncKernelClient):
    """The kernel client papermill gets from IPCKernelManager: shell and IOPub waits are sliced."""

    shell_channel_class = Type(SlicedWaitChannel)
    iopub_channel_class = Type(SlicedWaitChannel)


class SlicedWaitKernelManager(AsyncKernelManager):
    """papermill's kernel manager with the sliced-wait client (any transport; `make demo` uses it
    on TCP, as a user's own papermill command would run the runbook)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("client_class", f"{__name__}.SlicedWaitKernelClient")
        super().__init__(**kwargs)

    async def _async_interrupt_kernel(self) -> None:
        """The interrupt shutdown_kernel sends first: skipped (see the module docstring)."""
        if self.shutting_down:
            return
        await super()._async_interrupt_kernel()


class IPCKernelManager(SlicedWaitKernelManager):
    """A kernel manager whose kernel listens on IPC sockets under the temporary folder."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("transport", "ipc")
        kwargs.setdefault("ip", os.path.join(tempfile.gettempdir(), f"kimi-kernel-{uuid.uuid4().hex[:16]}"))
        super().__init__(**kwargs)


class AtomicOutput:
    """papermill's I/O handler for the executed copy's folder: each save replaces the file atomically."""

    def read(self, path: str) -> str:
        return Path(path).read_text(encoding="utf-8")

    def listdir(self, path: str) -> list[str]:
        return os.listdir(path)

    def write(self, buf: str, path: str) -> None:
        replace_text(path, buf)

    def pretty_path(self, path: str) -> str:
        return path


def write_atomically(dest: str | Path) -> str:
    """Have papermill write into `dest`'s folder through AtomicOutput (it picks a handler by path
    prefix: the folder is registered once); returns `dest` as papermill's output path."""
    from papermill.iorw import papermill_io

    target = str(Path(dest).absolute())
    if not isinstance(papermill_io.get_handler(target), AtomicOutput):
        papermill_io.register(os.path.join(os.path.dirname(target), ""), AtomicOutput())
    return target


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
    kernel_manager: IPCKernelManager | None = None,
) -> Any:
    """papermill.execute_notebook on an IPC kernel; `execution_timeout` bounds each cell (None: none).
    `save_each_cell` writes the executed copy after every cell (a stage that hangs can be read
    while it runs); the report, quick and re-renderable, skips it (~1 s with its plotly bundle).
    `kernel_manager`: a kernel already started for this notebook (execution.kernel_handoff), used
    as is and left running for the caller to stop; None: papermill starts and stops its own."""
    import papermill as pm

    given = {"km": kernel_manager} if kernel_manager is not None else {}
    return pm.execute_notebook(
        str(source),
        write_atomically(dest),
        parameters=parameters or {},
        cwd=str(cwd) if cwd is not None else None,
        kernel_name=kernel_name,
        progress_bar=progress_bar,
        log_output=log_output,
        execution_timeout=execution_timeout,
        kernel_manager_class=IPCKernelManager,
        request_save_on_cell_execute=save_each_cell,
        **given,
    )
