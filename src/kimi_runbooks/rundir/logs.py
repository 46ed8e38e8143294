"""Logs a child process writes into a run folder, redacted line by line on their way in: a pipe (or a
FIFO, for a process that opens its log by path) pumped by a thread here, so a key never lands in the
file even when the writer or this process is killed mid-write. RunFolder inherits these."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..secrets import LineRedactor, pump_fd


def _pump_and_close(read_fd: int, writer: LineRedactor, out: IO[str]) -> None:
    with out:
        pump_fd(read_fd, writer)


class LogPipes:
    """The log half of RunFolder: it supplies where a path lands and which secrets to redact."""

    def _inside(self, path: str | Path) -> Path:
        raise NotImplementedError

    @property
    def secret_envs(self) -> list[str]:
        raise NotImplementedError

    @contextmanager
    def open_log(self, path: str | Path, mode: str = "w", drain_s: float = 30.0) -> Iterator[IO[str]]:
        """A handle for a child's output: a pipe whose lines a thread here writes to the file redacted, so
        no key lands in it even if the child or this process is killed mid-write (unredacted bytes are
        lost, never written). On close: drained, for up to drain_s while a child still holds it."""
        read_fd, write_fd = os.pipe()
        with self._pumped(path, mode, read_fd, drain_s):
            with os.fdopen(write_fd, "w", encoding="utf-8", buffering=1) as fh:
                yield fh

    @contextmanager
    def log_channel(self, path: str | Path, mode: str = "a", drain_s: float = 30.0) -> Iterator[Path]:
        """A FIFO (outside the folder) for a process that opens its log by path (the bench worker):
        what it writes there reaches `path` redacted, as through open_log."""
        fifo = Path(tempfile.mkdtemp(prefix="kimi-log-")) / "log"
        os.mkfifo(fifo, 0o600)
        read_fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(read_fd, True)
        hold = os.open(fifo, os.O_WRONLY)  # ours: no EOF before the writer has come and gone
        try:
            with self._pumped(path, mode, read_fd, drain_s):
                try:
                    yield fifo
                finally:
                    os.close(hold)
        finally:
            shutil.rmtree(fifo.parent, ignore_errors=True)

    @contextmanager
    def _pumped(self, path: str | Path, mode: str, read_fd: int, drain_s: float) -> Iterator[None]:
        out = self._inside(path).open(mode, encoding="utf-8")
        writer = LineRedactor(out, self.secret_envs)
        thread = threading.Thread(target=_pump_and_close, args=(read_fd, writer, out), daemon=True)
        thread.start()
        try:
            yield
        finally:
            thread.join(drain_s)

    @contextmanager
    def redacting_writer(self, path: str | Path) -> Iterator[LineRedactor]:
        """Append-mode writer that redacts every line before it reaches the file (live logs)."""
        with self._inside(path).open("a", encoding="utf-8") as fh:
            writer = LineRedactor(fh, self.secret_envs)
            try:
                yield writer
            finally:
                writer.close()
