"""Whole-file writes that are never seen half-done: a temporary file in the same folder, then
os.replace. A run killed mid-write (or two runs writing one file) leaves the old content or the
new, never a cut-short process.json that every later start trips over. RunFolder inherits these."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

TEMP_SUFFIX = ".tmp"
"""A temporary file is `.NAME.<pid>.<random>.tmp` beside NAME: hidden, and never read as NAME's
kind of file (the registry reads `*.json`)."""


def temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


@contextlib.contextmanager
def _replacing(target: Path) -> Iterator[Path]:
    """Yield a temporary path beside `target`; on a clean exit it replaces `target`, on any error
    (KeyboardInterrupt included) it is removed and `target` is left as it was."""
    tmp = temp_path(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def replace_bytes(path: str | Path, data: bytes, *, executable: bool = False) -> Path:
    """Write `data` to `path` atomically (its folder must exist): readers see the old file or the new
    one. A new file gets the umask's permissions; a replaced one keeps its own."""
    target = Path(path)
    with _replacing(target) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # 0o666 & ~umask, as open() would
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)
        if executable:
            os.chmod(tmp, os.stat(tmp).st_mode | 0o111)
    return target


def replace_text(path: str | Path, text: str, *, executable: bool = False) -> Path:
    """`replace_bytes` of the text as UTF-8 (encoded before anything is written)."""
    return replace_bytes(path, text.encode("utf-8"), executable=executable)


def copy_file(src: str | Path, dest: str | Path) -> Path:
    """Copy a file to `dest` atomically (a binary file copied into a run folder: a tokenizer's)."""
    target = Path(dest)
    with _replacing(target) as tmp:
        shutil.copyfile(src, tmp)
    return target
