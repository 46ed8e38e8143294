"""A peer benchmark client against the emulator (issue 27 item 6): NVIDIA AIPerf 0.13.0 from PyPI, in
the `aiperf` tool env, with the emulator's tokenizer directory (make_offline_tokenizer; a local path,
no hub). A text prompt of N tokens must arrive as N tokens (within 1 %) and AIPerf's output counts
must equal the server's ``usage``, streamed and not, chat and completions; the
``prompt-tokens-off`` fault (another tokenizer's count) must be caught.

Three counts meet per request: AIPerf's (its tokenizer, client side), the server's ``usage``, and
the emulator's own tokenizer and chat template run here on the very text AIPerf sent (inputs.json).
Heavy: skipped locally without the env, an error in CI.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.kimi.chat_template import render
from kimi_runbooks.kimi.tokenizer import count_tokens
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.speed.aiperf import TokenRecord, Workload, aiperf_env, disagreements, profile_args, read_records
from kimi_runbooks.tools.envs import ToolEnv

pytestmark = pytest.mark.heavy

MODEL = "moonshotai/Kimi-K2.6"
N, OUT = 256, 32


@pytest.fixture(scope="module")
def aiperf(require_tool_env) -> ToolEnv:
    return require_tool_env("aiperf")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Path:
    return make_offline_tokenizer(tmp_path_factory.mktemp("client") / "tokenizer")


def run_aiperf(env: ToolEnv, base: str, tokenizer: Path, out: Path, **kw: object) -> list[TokenRecord]:
    args = profile_args(base, MODEL, tokenizer, out, Workload(input_tokens=N, output_tokens=OUT, requests=6, **kw))
    proc = subprocess.run(
        env.argv(*args), capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, env=aiperf_env()
    )
    assert proc.returncode == 0, f"aiperf profile failed (exit {proc.returncode}):\n{proc.stdout[-3000:]}"
    return read_records(out)


def sent_texts(out: Path) -> dict[str, str]:
    """session -> the prompt text AIPerf sent (its inputs.json)."""
    data = json.loads((out / "inputs.json").read_text())["data"]
    texts = {}
    for entry in data:
        payload = entry["payloads"][0]
        texts[entry["session_id"]] = payload["prompt"] if "prompt" in payload else payload["messages"][0]["content"]
    return texts


@pytest.mark.parametrize("streaming", [False, True], ids=["whole", "streamed"])
def test_chat_prompt_of_n_tokens_arrives_as_n(aiperf, tokenizer, tmp_path, streaming):
    with emulator_server(time_scale=0.01) as base:
        records = run_aiperf(aiperf, base, tokenizer, tmp_path / "out", endpoint="chat", streaming=streaming)
    texts = sent_texts(tmp_path / "out")
    assert len(records) == 6
    overheads = set()
    for r in records:
        text = texts[r.session]
        assert abs(r.input_tokens - N) <= 0.01 * N  # AIPerf made an N-token prompt with this tokenizer
        assert r.input_tokens == count_tokens(text)  # ... and the emulator's tokenizer agrees
        rendered = count_tokens(render([{"role": "user", "content": text}], None))
        assert r.server_prompt == rendered  # the server charged the templated prompt, nothing else
        overheads.add(rendered - count_tokens(text))
        assert r.output_tokens == r.server_completion == OUT  # ignore_eos: exactly --osl tokens
    (overhead,) = overheads  # the chat template's tokens around one user message, the same each time
    assert disagreements(records, prompt_overhead=overhead) == []
    ratio = sum(r.server_prompt or 0 for r in records) / sum(r.input_tokens + overhead for r in records)
    print(f"\nAIPerf chat ({'streamed' if streaming else 'whole'}): server/client prompt tokens = {ratio:.4f}")


def test_completions_prompt_arrives_untouched(aiperf, tokenizer, tmp_path):
    with emulator_server(time_scale=0.01) as base:
        records = run_aiperf(aiperf, base, tokenizer, tmp_path / "out", endpoint="completions")
    texts = sent_texts(tmp_path / "out")
    assert len(records) == 6 and disagreements(records) == []
    for r in records:
        assert r.server_prompt == r.input_tokens == count_tokens(texts[r.session])
        assert r.output_tokens == r.server_completion == OUT


def test_another_tokenizers_count_is_caught(aiperf, tokenizer, tmp_path):
    # the fault scales the chat prompt count by 0.8, as a server with another tokenizer would report
    with emulator_server(time_scale=0.01, fault="prompt-tokens-off") as base:
        records = run_aiperf(aiperf, base, tokenizer, tmp_path / "out", endpoint="chat")
    text = sent_texts(tmp_path / "out")[records[0].session]
    overhead = count_tokens(render([{"role": "user", "content": text}], None)) - count_tokens(text)
    found = disagreements(records, prompt_overhead=overhead)
    assert len(found) == len(records) == 6
    assert all("arrived as" in line and "not the server's" in line for line in found), found
