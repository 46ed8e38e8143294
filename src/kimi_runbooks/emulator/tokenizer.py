"""A deterministic stand-in tokenizer, so usage numbers are stable and exact.

The emulator has no vocabulary of Kimi's, but runbooks check token *counts*
(usage, bench_serving's exact output lengths), not token identities.  One token
is one regex piece: a run of word characters or a single punctuation mark, each
carrying the whitespace in front of it.  Because every piece keeps its leading
whitespace, joining pieces and re-tokenizing the result gives back the same
pieces, so "generate N pieces" and "count the text" always agree.
"""

from __future__ import annotations

import hashlib
import re

VOCAB_SIZE = 163840  # Kimi-K2's vocabulary size; fake ids stay inside it.

_PIECE = re.compile(r"\s*(?:\w+|[^\w\s])|\s+$", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Split text into token pieces; "".join(tokenize(t)) == t."""
    return _PIECE.findall(text)


def count_tokens(text: str) -> int:
    """Number of tokens the emulator charges for this text."""
    return len(tokenize(text))


def piece_id(piece: str) -> int:
    """A stable fake token id for a piece (for output_ids-like fields)."""
    digest = hashlib.blake2b(piece.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % VOCAB_SIZE
