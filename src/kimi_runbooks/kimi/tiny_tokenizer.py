"""The tokenizer of the tiny rehearsal checkpoint: the project's byte-level vocabulary with Kimi's
special tokens (k2_format.py) and Kimi's chat template, as a Hugging Face tokenizer directory.

SGLang loads it (the checkpoint directory is the server's --model-path), and so does every stage that
counts tokens (bench_serving --tokenizer, the Vendor Verifier's prompt-token check): one tokenizer
for the server and its clients.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ..rundir import RunFolder
from . import k2_format as k2
from .hf_tokenizer import token_ids, tokenizer_config, tokenizer_json
from .tokenizer_data import load

EXTRA_TOKENS: tuple[tuple[str, bool], ...] = (
    *((t, True) for t in k2.SPECIAL_TOKENS),
    *((t, False) for t in k2.PLAIN_ADDED_TOKENS),
)


@dataclass(frozen=True)
class KimiTokenIds:
    """The ids a checkpoint's config.json and generation_config.json name."""

    bos: int
    eos: int
    turn_end: int
    vocab_size: int
    """Ids the tokenizer can produce (the vocabulary plus the added tokens); the embedding is at least this."""


def kimi_token_ids() -> KimiTokenIds:
    doc = load()
    ids = token_ids(list(EXTRA_TOKENS), doc)
    return KimiTokenIds(
        bos=ids[k2.BOS],
        eos=ids[k2.EOS],
        turn_end=ids[k2.TURN_END],
        vocab_size=max(len(doc["tokens"]), *ids.values()) + 1,
    )


def write_kimi_tokenizer(folder: RunFolder, dest: Path) -> KimiTokenIds:
    """tokenizer.json and tokenizer_config.json (with the chat template) into `dest`."""
    ids = kimi_token_ids()
    config = tokenizer_config(k2.BOS, k2.EOS, k2.CHAT_TEMPLATE)
    folder.save_text(dest / "tokenizer.json", json.dumps(tokenizer_json(extra_tokens=EXTRA_TOKENS), ensure_ascii=False))
    folder.save_text(dest / "tokenizer_config.json", json.dumps(config, indent=2) + "\n")
    return ids
