"""Hugging Face tokenizer files built from the project's byte-level vocabulary (tokenizer_data.py).

Pure JSON, written without the ``tokenizers`` package: SmolLM2's BPE (vocabulary, merges, its
pre-tokenizer: digits split one by one, then GPT-2's byte-level pattern), its control tokens as added
special tokens, no post-processor (no BOS/EOS added). `extra_tokens` adds tokens on top (Kimi's
special tokens for the tiny rehearsal checkpoint): one that the vocabulary already holds keeps its
id (SmolLM2 has `<|im_end|>` as id 2), the others take the ids after the vocabulary, in order.
`tokenizer_config` is the tokenizer_config.json both directories the project writes share (the
counting tokenizer's, tokenizer_files.py; the tiny checkpoint's, tiny_tokenizer.py).
"""

from __future__ import annotations

from typing import Any

from .tokenizer_data import load


def added_token(token_id: int, content: str, special: bool) -> dict[str, Any]:
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": special,
    }


def token_ids(extra: list[tuple[str, bool]], doc: dict[str, Any] | None = None) -> dict[str, int]:
    """Each extra token's id: the vocabulary's own where it has the token, else the next free id."""
    doc = doc or load()
    tokens: list[str] = doc["tokens"]
    known = {t: i for i, t in enumerate(tokens)}
    ids: dict[str, int] = {}
    next_id = len(tokens)
    for content, _ in extra:
        if content in known:
            ids[content] = known[content]
        elif content not in ids:
            ids[content] = next_id
            next_id += 1
    return ids


def tokenizer_json(
    doc: dict[str, Any] | None = None, extra_tokens: tuple[tuple[str, bool], ...] = ()
) -> dict[str, Any]:
    """tokenizer.json for the vocabulary, plus `extra_tokens` as (content, special) pairs."""
    doc = doc or load()
    tokens: list[str] = doc["tokens"]
    specials = set(doc["special_ids"])
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    added = {i: added_token(i, tokens[i], True) for i in sorted(specials)}
    ids = token_ids(list(extra_tokens), doc)
    for content, special in extra_tokens:
        added[ids[content]] = added_token(ids[content], content, special)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added[i] for i in sorted(added)],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [{"type": "Digits", "individual_digits": True}, byte_level],
        },
        "post_processor": None,
        "decoder": byte_level,
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(tokens)},
            "merges": [m.split(" ", 1) for m in doc["merges"]],
        },
    }


def tokenizer_config(bos: str, eos: str, chat_template: str, **extra: Any) -> dict[str, Any]:
    """tokenizer_config.json: a fast tokenizer that adds no BOS/EOS itself, with `chat_template`."""
    return {
        # "PreTrainedTokenizerFast" loads in transformers 4 and 5 (5's own "TokenizersBackend" does not in 4)
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": bos,
        "eos_token": eos,
        "pad_token": eos,
        "unk_token": None,
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": 1 << 20,
        "clean_up_tokenization_spaces": False,
        "chat_template": chat_template,
        **extra,
    }
