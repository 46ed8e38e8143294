"""Keep the emulator answering when clients hold more connections than it has file descriptors.

uvicorn accepts every connection while it can; idle ones (opened, never used) hold a descriptor
each, and at the process's file limit accept() fails. asyncio then logs a full traceback per
failed accept and retries every second, so /health stops answering and the log grows by megabytes
a second. Here the connection count stays under a budget below the file limit (the oldest idle
connection is closed to make room for a new one; with none idle the new one gets a 503), and each
kind of warning or error is logged once per interval, with a count of the ones held back.
"""

from __future__ import annotations

import logging
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from .settings import EmulatorSettings

log = logging.getLogger("kimi_runbooks.emulator")

UNLIMITED_FDS = 65536
THROTTLE_INTERVAL_S = 10.0
BUSY_RESPONSE = b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
WILDCARD_HOSTS = ("0.0.0.0", "::", "")


def fd_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return UNLIMITED_FDS if soft == resource.RLIM_INFINITY else int(soft)


def connection_budget(limit: int | None = None) -> int:
    """Connections to keep open at most: the file limit minus room for the listener, logs, the
    event loop and files the app opens (an eighth of the limit, at least 64)."""
    limit = limit or fd_limit()
    return max(1, limit - max(64, limit // 8))


def low_water(budget: int) -> int:
    """Where shedding stops: below the budget by a margin, so the next burst of accepts (asyncio
    accepts many in one go before any of them is seen here) fits under the file limit."""
    return max(1, budget - max(16, budget // 4))


def _idle(protocol: Any) -> bool:
    cycle = getattr(protocol, "cycle", None)
    return cycle is None or bool(getattr(cycle, "response_complete", False))


def bounded_protocol(budget: int) -> type:
    """uvicorn's HTTP protocol, keeping at most `budget` connections open."""

    class BoundedHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
        max_connections = budget

        def connection_made(self, transport: Any) -> None:
            self.last_active = time.monotonic()
            super().connection_made(transport)
            if len(self.connections) > self.max_connections:
                self._make_room()

        def data_received(self, data: bytes) -> None:
            self.last_active = time.monotonic()
            super().data_received(data)

        def _make_room(self) -> None:
            open_now = [c for c in self.connections if not c.transport.is_closing()]
            idle = sorted(
                (c for c in open_now if c is not self and _idle(c)), key=lambda c: getattr(c, "last_active", 0.0)
            )
            excess = len(open_now) - low_water(self.max_connections)
            if idle:
                for conn in idle[:excess]:
                    conn.transport.close()
                log.warning(
                    "connection budget reached (%d open, budget %d below the file limit %d): "
                    "closed the %d oldest idle connection(s) to make room",
                    len(open_now),
                    self.max_connections,
                    fd_limit(),
                    min(excess, len(idle)),
                )
                return
            log.warning("connection budget reached and no connection is idle: answering 503")
            self.transport.write(BUSY_RESPONSE)
            self.transport.close()

    return BoundedHTTPProtocol


@dataclass
class _Seen:
    since: float
    held_back: int = 0


class ErrorThrottle(logging.Filter):
    """Pass each kind of warning/error once per interval; the next one that passes says how many
    were held back. A kind is (logger, level, first line of the message, exception type). An
    OSError (out of files, connection reset) is told in one line: its traceback is asyncio's."""

    def __init__(self, interval_s: float = THROTTLE_INTERVAL_S, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.clock = clock
        self._seen: dict[tuple[str, int, str, str], _Seen] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        key = (record.name, record.levelno, str(record.msg).split("\n", 1)[0], type(exc).__name__)
        now = self.clock()
        seen = self._seen.get(key)
        if seen is not None and now - seen.since < self.interval_s:
            seen.held_back += 1
            return False
        self._seen[key] = _Seen(now)
        if isinstance(exc, OSError):
            record.msg = f"{str(record.msg).split(chr(10), 1)[0]}: {exc}".replace("%", "%%")
            record.exc_info = None
            record.exc_text = None
        if seen is not None and seen.held_back:
            record.msg = f"{record.msg} ({seen.held_back} more like it held back in the last {self.interval_s:g} s)"
        return True


def install_throttle(throttle: ErrorThrottle | None = None) -> ErrorThrottle:
    """Put one throttle on every handler the emulator's records reach (root, uvicorn's)."""
    throttle = throttle or ErrorThrottle()
    for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access"):
        for handler in logging.getLogger(name).handlers:
            if throttle not in handler.filters:
                handler.addFilter(throttle)
    return throttle


def bind_warning(settings: EmulatorSettings) -> str | None:
    """The warning for a bind on every interface with no API key (anyone on the network can use it)."""
    if settings.host in WILDCARD_HOSTS and not settings.api_key:
        return (
            f"binding {settings.host or '0.0.0.0'}:{settings.port} with no API key: anyone who can reach this "
            "machine can use this server. Fix: --host 127.0.0.1, or --api-key-env VAR."
        )
    return None
