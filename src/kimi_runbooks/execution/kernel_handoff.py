"""A runbook's next stage kernel starts while the current stage runs; a finished one stops meanwhile.

Each stage notebook runs in a kernel of its own (papermill). Starting one (a Python process,
ipykernel's imports, the ZMQ handshake) took 0.4-0.9 s, and stopping one (shutdown request, the
process's exit) 0.5-1 s, both on the runbook's critical path, five times in a demo run. Most of a
stage is spent waiting on its server, so the next kernel can start in that time, and a finished
kernel can exit while the next stage already runs. Nothing else changes: every stage still gets a
fresh kernel of the kernelspec its notebook names, started in the run folder with the run's
environment; it is handed to papermill (nbclient uses a kernel manager it is given as is).

A kernel that died before its stage is replaced by a fresh start inside papermill, as without
this module. `close()` (the runbook calls it before tearing the server down) stops the kernels
not used and waits until every kernel handed back has exited.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .notebook import IPCKernelManager

HISTORY_IN_MEMORY = "--HistoryManager.hist_file=:memory:"
"""What nbclient passes to a kernel it starts itself (NotebookClient.ipython_hist_file)."""


def notebook_kernel(notebook: Path, kernel_name: str | None = None) -> str:
    """The kernelspec papermill would start for `notebook`: `kernel_name` or its metadata's."""
    if kernel_name:
        return kernel_name
    spec = json.loads(notebook.read_text()).get("metadata", {}).get("kernelspec", {})
    return str(spec.get("name") or "python3")


class HandedKernelManager(IPCKernelManager):
    """An IPC kernel manager that remembers the clients it made: nbclient does not stop the channels
    of a client on a kernel it was handed, and their open sockets held the runbook's kernel at exit
    (zmq's context waits for them), so `release` stops them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.made_clients: list[Any] = []

    def client(self, **kwargs: Any) -> Any:
        kc = super().client(**kwargs)
        self.made_clients.append(kc)
        return kc


async def _start(kernel_name: str, cwd: Path) -> HandedKernelManager:
    km = HandedKernelManager(kernel_name=kernel_name)
    await km.start_kernel(extra_arguments=[HISTORY_IN_MEMORY], cwd=str(cwd))
    return km


async def _stop(km: HandedKernelManager) -> None:
    if await km.is_alive():
        await km.shutdown_kernel(now=False)
    else:
        await km.cleanup_resources()


class KernelHandoff:
    """Kernels started ahead (`prestart`, then `take`) and stopped behind (`release`); see the module doc."""

    def __init__(self, cwd: Path) -> None:
        self._cwd = cwd
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kernel-handoff")
        self._ahead: dict[str, Future[HandedKernelManager]] = {}
        self._stopping: list[Future[None]] = []

    def prestart(self, notebook: Path, kernel_name: str | None = None) -> None:
        """Start the kernel `notebook` will run in, in the background."""
        key = str(notebook)
        if key not in self._ahead:
            name = notebook_kernel(notebook, kernel_name)
            self._ahead[key] = self._pool.submit(asyncio.run, _start(name, self._cwd))

    def take(self, notebook: Path) -> HandedKernelManager | None:
        """The kernel started for `notebook`, running; None when none was started or it died (papermill
        then starts its own)."""
        future = self._ahead.pop(str(notebook), None)
        if future is None:
            return None
        try:
            km = future.result()
        except Exception:  # noqa: BLE001 - a kernel that failed to start ahead is started again by papermill
            return None
        process = getattr(km.provisioner, "process", None)  # LocalProvisioner's Popen
        if km.has_kernel and process is not None and process.poll() is None:
            return km
        self.release(km)
        return None

    def release(self, km: HandedKernelManager) -> None:
        """Stop a kernel handed out by `take`, in the background (its clients' channels first, here)."""
        for kc in km.made_clients:
            kc.stop_channels()
        km.made_clients.clear()
        self._stopping.append(self._pool.submit(asyncio.run, _stop(km)))

    def close(self) -> None:
        """Stop the kernels started but not taken and wait until every kernel has exited."""
        for key in list(self._ahead):
            future = self._ahead.pop(key)
            try:
                self.release(future.result())
            except Exception:  # noqa: BLE001, S112 - it never started: nothing to stop
                continue
        for stopping in self._stopping:
            try:
                stopping.result(timeout=30)
            except Exception:  # noqa: BLE001, S112 - a kernel that is already gone
                continue
        self._pool.shutdown(wait=True)
