"""The project's counting tokenizer: SmolLM2's byte-level BPE (tokenizer_data.py), exact and shared.

The emulator charges prompts and replies with it, and the stages count with it what an emulated
server will report. Any text tokenizes (byte-level: every byte has a token, so nothing is unknown),
and the counts equal those of the Hugging Face tokenizer directory the benchmark client is given
(tokenizer_files.py writes it from the same data): SmolLM2's pre-tokenizer, as its
tokenizer.json declares it, splits every digit alone (``Digits(individual_digits=True)``), then
applies the GPT-2 byte-level pattern ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+|
?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`` (``ByteLevel(use_regex=True)``); control tokens such as
``<|im_start|>`` are matched whole first, as added special tokens are; each piece is merged by
rank. tests/kimi/test_tokenizer.py holds the counts to the ``tokenizers`` package's.

Token *pieces* (``tokenize``) are each token's text: a token that ends inside a multi-byte
character gives "" and the character comes with the token that completes it, as SGLang's
incremental detokenizer holds incomplete bytes back; "".join(tokenize(t)) == t for every text
without the six C0 control characters SmolLM2's vocabulary has no byte token for (U+0004,
U+0006, U+0013, U+0014, U+0016, U+001D), which are dropped as the ``tokenizers`` package drops them.
The vocabulary is SmolLM2's (49,152 ids), not Kimi's: counts are realistic for English text,
not Kimi's exact counts. ``VOCAB_SIZE`` stays Kimi's, the id range the server accepts.
"""

from __future__ import annotations

import codecs
import hashlib
import re
from functools import cache
from typing import Any

from .tokenizer_data import load

VOCAB_SIZE = 163840  # Kimi-K2's vocabulary size: the input_ids range the emulated server accepts.
# Unicode White_Space (what \s means to the Rust/Oniguruma regex of the tokenizers package; Python's
# \s also takes U+001C..U+001F, which are not White_Space).
_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


def _byte_alphabet() -> dict[int, str]:
    """GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 upwards."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, extra = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def _char_class(ranges: list[list[int]]) -> str:
    def esc(cp: int) -> str:
        return f"\\U{cp:08x}"

    return "".join(esc(a) if a == b else f"{esc(a)}-{esc(b)}" for a, b in ranges)


class BPE:
    """Encoder over one tokenizer document (vocabulary in id order, merges in rank order)."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.tokens: list[str] = doc["tokens"]
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        self.ranks = {tuple(m.split(" ", 1)): r for r, m in enumerate(doc["merges"])}
        self.specials = [self.tokens[i] for i in doc["special_ids"]]
        self.special_ids = set(doc["special_ids"])
        self.eos_id = int(doc.get("eos_id") or 0)
        letters, numbers = _char_class(doc["unicode"]["L"]), _char_class(doc["unicode"]["N"])
        self._special = re.compile("|".join(re.escape(s) for s in sorted(self.specials, key=len, reverse=True)))
        self._digit = re.compile(f"[{numbers}]")
        self._piece = re.compile(
            rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{letters}]+| ?[{numbers}]+| ?[^{_SPACE}{letters}{numbers}]+"
            rf"|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]+"
        )
        self._to_unicode = _byte_alphabet()
        self._to_byte = {c: b for b, c in self._to_unicode.items()}
        self._cache: dict[str, list[int]] = {}

    def encode(self, text: str) -> list[int]:
        ids: list[int] = []
        start = 0
        for match in self._special.finditer(text) if self.specials else ():
            ids += self._encode_ordinary(text[start : match.start()])
            ids.append(self.ids[match.group()])
            start = match.end()
        return ids + self._encode_ordinary(text[start:])

    def _encode_ordinary(self, text: str) -> list[int]:
        ids: list[int] = []
        start = 0
        for match in self._digit.finditer(text):  # Digits(individual_digits=True): each digit alone
            ids += self._encode_chunk(text[start : match.start()])
            ids += self._word(match.group())
            start = match.end()
        return ids + self._encode_chunk(text[start:])

    def _encode_chunk(self, text: str) -> list[int]:
        ids: list[int] = []
        for word in self._piece.findall(text):
            ids += self._word(word)
        return ids

    def _word(self, word: str) -> list[int]:
        found = self._cache.get(word)
        if found is not None:
            return found
        # a byte with no token (six C0 controls, e.g. U+001D, and bytes UTF-8 never uses) is dropped
        # before merging, as the tokenizers package's BPE does without an unk token
        parts = [c for c in (self._to_unicode[b] for b in word.encode("utf-8", "surrogatepass")) if c in self.ids]
        while len(parts) > 1:
            pairs = [(self.ranks.get((a, b)), i) for i, (a, b) in enumerate(zip(parts, parts[1:]))]
            ranked = [(r, i) for r, i in pairs if r is not None]
            if not ranked:
                break
            _, at = min(ranked)
            first, second = parts[at], parts[at + 1]
            merged, i = [], 0
            while i < len(parts):  # every occurrence of the best pair, left to right
                if i < len(parts) - 1 and parts[i] == first and parts[i + 1] == second:
                    merged.append(first + second)
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = [self.ids[p] for p in parts]  # every merge result is in the vocabulary
        if len(self._cache) < 200_000:
            self._cache[word] = ids
        return ids

    def token_bytes(self, token_id: int) -> bytes:
        text = self.tokens[token_id]
        if token_id in self.special_ids:
            return text.encode("utf-8", "surrogatepass")
        return bytes(self._to_byte[c] for c in text)

    def pieces(self, text: str) -> list[str]:
        """Each token's text, incomplete UTF-8 carried to the token that completes it."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        ids = self.encode(text)
        out = [decoder.decode(self.token_bytes(i)) for i in ids]
        tail = decoder.decode(b"", final=True)
        if tail and out:
            out[-1] += tail
        return out


@cache
def bpe() -> BPE:
    """The counting tokenizer, built once per process."""
    return BPE(load())


def tokenize(text: str) -> list[str]:
    """Token pieces of ``text``; "".join(tokenize(t)) == t."""
    return bpe().pieces(text) if text else []


def count_tokens(text: str) -> int:
    """Number of tokens the emulator charges for this text."""
    return len(bpe().encode(text)) if text else 0


def token_ids(text: str) -> list[int]:
    return bpe().encode(text) if text else []


def piece_id(piece: str) -> int:
    """The token id of a piece (for output_ids-like fields); a stable stand-in for a partial character."""
    ids = token_ids(piece)
    if len(ids) == 1:
        return ids[0]
    digest = hashlib.blake2b(piece.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % len(bpe().tokens)
