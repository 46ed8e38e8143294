"""The stage notebooks' kernel client: a reply whose wake-up the poll missed is still seen soon.

nbclient waits for a cell's reply with one poll as long as the cell timeout; a missed wake-up then
costs the whole timeout (jupyter/nbclient issue 312). The fake socket below behaves like that
poll: it reports what is ready only when its own wait ends, never when a message arrives."""

from __future__ import annotations

import asyncio
import time
from queue import Empty
from typing import Any

import pytest
from jupyter_client.channels import AsyncZMQSocketChannel

from kimi_runbooks.execution.notebook import (
    POLL_SLICE_S,
    IPCKernelManager,
    SlicedWaitChannel,
    SlicedWaitKernelClient,
    SlicedWaitKernelManager,
    execute_notebook,
)


class DeafSocket:
    """poll(timeout_ms) sleeps the whole timeout (None: forever), then says whether a message is there."""

    def __init__(self, ready_at: float) -> None:
        self.ready_at = ready_at

    async def poll(self, timeout_ms: int | None = None) -> int:
        if timeout_ms is None:
            await asyncio.sleep(3600)
        elif timeout_ms:
            await asyncio.sleep(timeout_ms / 1000)
        return int(time.monotonic() >= self.ready_at)


def _channel(cls: type[AsyncZMQSocketChannel], arrives_in: float) -> Any:
    channel = cls.__new__(cls)  # no real socket or session: only get_msg's waiting is under test
    channel.socket = DeafSocket(time.monotonic() + arrives_in)  # type: ignore[assignment]

    async def recv() -> dict[str, Any]:
        return {"msg_type": "execute_reply"}

    channel._recv = recv  # type: ignore[method-assign]
    return channel


async def _timed(channel: Any, timeout: float | None) -> tuple[Any, float]:
    start = time.monotonic()
    try:
        msg = await channel.get_msg(timeout=timeout)
    except Empty:
        msg = None
    return msg, time.monotonic() - start


def test_a_reply_that_arrives_during_a_long_wait_is_seen_within_a_slice():
    msg, took = asyncio.run(_timed(_channel(SlicedWaitChannel, 0.3), timeout=30))
    assert msg == {"msg_type": "execute_reply"}
    assert took < 0.3 + 2 * POLL_SLICE_S


def test_the_unsliced_channel_would_wait_out_the_timeout():
    """The failure this guards against, shown on jupyter_client's own channel (2 s, not 15 min)."""
    msg, took = asyncio.run(_timed(_channel(AsyncZMQSocketChannel, 0.3), timeout=2))
    assert msg == {"msg_type": "execute_reply"} and took >= 1.9


def test_the_timeout_still_holds_and_none_waits_until_a_message():
    msg, took = asyncio.run(_timed(_channel(SlicedWaitChannel, 60), timeout=0.6))
    assert msg is None and 0.55 <= took < 0.6 + POLL_SLICE_S
    msg, took = asyncio.run(_timed(_channel(SlicedWaitChannel, 0), timeout=0))
    assert msg is not None and took < POLL_SLICE_S
    msg, took = asyncio.run(_timed(_channel(SlicedWaitChannel, 0.4), timeout=None))
    assert msg is not None and took < 0.4 + 2 * POLL_SLICE_S


@pytest.mark.parametrize("manager", [IPCKernelManager, SlicedWaitKernelManager])
@pytest.mark.parametrize("channel", ["shell_channel_class", "iopub_channel_class"])
def test_the_kernel_managers_hand_papermill_the_sliced_client(manager: type, channel: str):
    """IPC for the stage notebooks, TCP for `make demo`'s runbook (scripts/demo.py)."""
    km = manager()
    assert km.transport == ("ipc" if manager is IPCKernelManager else "tcp")
    client = km.client()
    assert isinstance(client, SlicedWaitKernelClient)
    assert getattr(client, channel) is SlicedWaitChannel


def test_the_demo_runs_the_runbook_with_the_sliced_client():
    from kimi_runbooks.paths import REPO_ROOT

    assert "kernel_manager_class=SlicedWaitKernelManager" in (REPO_ROOT / "scripts" / "demo.py").read_text()


CHILD = """
import signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
signal.signal(signal.SIGINT, lambda *_: out.with_suffix(".sigint").write_text("SIGINT"))
out.write_text("ready")
time.sleep(60)
"""


def test_a_finished_notebooks_kernel_is_shut_down_without_an_interrupt(tmp_path, capfd):
    """Issue 40: a stray "KeyboardInterrupt caught in kernel" line in the accuracy stage's output.
    jupyter_client interrupted the kernel (SIGINT to its process group) before asking it to shut
    down, right after papermill's last kernel_info request; a kernel still in that handler logged
    the line. A child left in the kernel's process group shows whether that SIGINT was sent."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from kimi_runbooks.execution.notebook import execute_notebook

    mark = tmp_path / "child"
    start = (
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', {CHILD!r}, {str(mark)!r}])\n"
        f"while not __import__('pathlib').Path({str(mark)!r}).exists(): time.sleep(0.02)\n"
    )
    source = tmp_path / "nb.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell(start)]), source)
    execute_notebook(source, tmp_path / "out.ipynb", kernel_name="python3", save_each_cell=False)
    time.sleep(0.5)  # a SIGINT sent at shutdown has long reached the child by now
    assert mark.read_text() == "ready"
    assert not mark.with_suffix(".sigint").exists(), "the kernel's process group got SIGINT at shutdown"
    assert "KeyboardInterrupt caught in kernel" not in capfd.readouterr().err


@pytest.mark.slow  # starts a kernel (~3 s)
def test_papermill_saves_the_executed_copy_atomically(tmp_path, monkeypatch):
    """papermill rewrites the executed copy after every cell; a run killed during one of those saves
    must leave the previous copy, so the copy is never opened for writing in place (issue 40)."""
    import builtins

    import nbformat
    import papermill.iorw

    source, dest = tmp_path / "source.ipynb", tmp_path / "notebooks" / "executed.ipynb"
    dest.parent.mkdir()
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")]), source)
    opened_in_place: list[str] = []

    def recording_open(file, mode="r", *args, **kwargs):
        if set(str(mode)) & set("wa+") and str(file).endswith("executed.ipynb"):
            opened_in_place.append(str(file))
        return builtins.open(file, mode, *args, **kwargs)

    monkeypatch.setattr(papermill.iorw, "open", recording_open, raising=False)  # papermill's local writes
    execute_notebook(source, dest, kernel_name="python3")
    assert opened_in_place == []
    assert nbformat.read(dest, as_version=4).cells[0].source == "x = 1"
    assert [p.name for p in dest.parent.iterdir()] == ["executed.ipynb"]  # no temporary file left
