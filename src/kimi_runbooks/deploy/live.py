"""Servers this Python process started and has not released: stopped at exit and on SIGINT/SIGTERM.

A notebook that dies between launch and teardown must not leave 8 GPUs held; `register` hooks
atexit and the signals once, and `stop_all` stops every live handle.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
from typing import Any, Protocol


class Stoppable(Protocol):
    def stop(self) -> None: ...


_LIVE: dict[int, Stoppable] = {}
_PREVIOUS: dict[int, Any] = {}
_HOOKED = False
_LOCK = threading.Lock()


def register(handle: Stoppable) -> None:
    global _HOOKED
    with _LOCK:
        _LIVE[id(handle)] = handle
        if _HOOKED:
            return
        _HOOKED = True
    atexit.register(stop_all)
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                _PREVIOUS[sig] = signal.signal(sig, _on_signal)
            except (ValueError, OSError):
                pass


def unregister(handle: Stoppable) -> None:
    with _LOCK:
        _LIVE.pop(id(handle), None)


def stop_all() -> None:
    """Stop every server this process launched and has not detached (atexit and signals)."""
    for handle in list(_LIVE.values()):
        try:
            handle.stop()
        except Exception:  # noqa: BLE001 - teardown must never raise on the way out
            pass


def _on_signal(signum: int, frame: Any) -> None:
    stop_all()
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
