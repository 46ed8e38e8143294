"""AIPerf (ai-dynamo/aiperf, the `aiperf` tool env) as a peer client of a runbook's server.

``profile_args`` is the ``aiperf profile`` command line for a synthetic text workload against a
server, with the tokenizer the runbook uses (a local directory: the emulator's is the run folder's
``tokenizer/``, a real server's the ``tokenizer`` parameter or the plan's ``model_path``);
``read_records`` reads AIPerf's per-request export (``profile_export.jsonl``) and
``disagreements`` compares its client-side token counts with the server's ``usage``:

* prompt: AIPerf's input sequence length (the text it generated, counted with the tokenizer),
  plus the chat template's tokens around it (``prompt_overhead``; 0 for ``completions``),
  against ``usage.prompt_tokens``;
* output: AIPerf's output sequence length (the reasoning and content it received, counted with
  the tokenizer) against ``usage.completion_tokens``.

Flags are AIPerf 0.13.0's (``aiperf profile --help``). ``--streaming`` requests carry
``stream_options.include_usage`` so the last chunk has the server's usage while AIPerf still
counts tokens itself (``--use-server-token-count`` would make it report the server's numbers
instead, and the comparison would be empty).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "RECORDS_FILE",
    "TokenRecord",
    "Workload",
    "aiperf_env",
    "disagreements",
    "profile_args",
    "read_records",
]

RECORDS_FILE = "profile_export.jsonl"
"""AIPerf's per-request metrics export (``--export-level records``, its default)."""

HUB_OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@dataclass(frozen=True)
class Workload:
    """AIPerf's synthetic text workload: fixed lengths, a request count, a concurrency."""

    endpoint: str = "chat"
    """chat or completions."""
    input_tokens: int = 256
    output_tokens: int = 32
    requests: int = 8
    concurrency: int = 2
    streaming: bool = False
    seed: int = 0


def profile_args(
    base_url: str, model: str, tokenizer: str | Path, artifact_dir: str | Path, workload: Workload | None = None
) -> list[str]:
    """Arguments after ``aiperf``: `workload` (default: Workload()), no dashboard, no GPU telemetry.

    ``ignore_eos`` makes the server generate ``output_tokens`` (SGLang honours it); server metrics
    scraping is off (the runbook's speed stage scrapes /metrics itself).
    """
    w = workload or Workload()
    endpoint, input_tokens, output_tokens = w.endpoint, w.input_tokens, w.output_tokens
    requests, concurrency, streaming, seed = w.requests, w.concurrency, w.streaming, w.seed
    if endpoint not in ("chat", "completions"):
        raise ValueError(f"endpoint must be 'chat' or 'completions', got {endpoint!r}")
    if min(input_tokens, output_tokens, requests, concurrency) < 1:
        raise ValueError("input_tokens, output_tokens, requests and concurrency must be at least 1")
    extra: dict[str, Any] = {"ignore_eos": True}
    if streaming:
        extra["stream_options"] = {"include_usage": True}
    args = ["profile", "--model", model, "--url", base_url.rstrip("/"), "--endpoint-type", endpoint]
    args += ["--tokenizer", str(Path(tokenizer).resolve())]
    args += ["--isl", str(input_tokens), "--osl", str(output_tokens), "--extra-inputs", json.dumps(extra)]
    args += ["--request-count", str(requests), "--concurrency", str(concurrency), "--random-seed", str(seed)]
    args += ["--artifact-dir", str(artifact_dir), "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"]
    return [*args, "--streaming"] if streaming else args


def aiperf_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: AIPerf 0.13.0 loads a local tokenizer directory without the hub, but
    with HF_HUB_OFFLINE=1 it looks the path up in the hub cache instead and fails (fixed by
    ai-dynamo/aiperf PR 1339), so the offline switches are removed for it."""
    env = dict(os.environ if base is None else base)
    for var in HUB_OFFLINE_VARS:
        env.pop(var, None)
    return env


@dataclass(frozen=True)
class TokenRecord:
    """One request as AIPerf recorded it: its own counts and the server's usage (None: not reported)."""

    session: str
    input_tokens: int
    output_tokens: int
    server_prompt: int | None
    server_completion: int | None


def _value(metrics: Mapping[str, Any], name: str) -> int | None:
    entry = metrics.get(name)
    value = entry.get("value") if isinstance(entry, Mapping) else None
    return int(value) if isinstance(value, int | float) else None


def read_records(artifact_dir: str | Path) -> list[TokenRecord]:
    """The per-request token counts of one ``aiperf profile`` run (its ``profile_export.jsonl``)."""
    path = Path(artifact_dir) / RECORDS_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: AIPerf wrote no per-request records (it needs --export-level records "
            "or raw, its default is records; see its log under logs/ in the artifact directory)"
        )
    records = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        metrics, meta = row.get("metrics") or {}, row.get("metadata") or {}
        isl, osl = _value(metrics, "input_sequence_length"), _value(metrics, "output_sequence_length")
        if isl is None or osl is None:
            continue  # a failed request: no lengths to compare
        prompt, completion = _value(metrics, "usage_prompt_tokens"), _value(metrics, "usage_completion_tokens")
        records.append(TokenRecord(str(meta.get("conversation_id", "")), isl, osl, prompt, completion))
    return records


def _off(got: int, want: int, tolerance: float) -> bool:
    return abs(got - want) > tolerance * max(want, 1)


def disagreements(records: Sequence[TokenRecord], *, prompt_overhead: int = 0, tolerance: float = 0.01) -> list[str]:
    """Why AIPerf's counts and the server's differ (empty: they agree within ``tolerance``)."""
    if not records:
        return ["no successful request was recorded: nothing to compare"]
    found = []
    for r in records:
        if r.server_prompt is None or r.server_completion is None:
            found.append(f"{r.session}: the server reported no usage (a stream without include_usage?)")
            continue
        want_prompt = r.input_tokens + prompt_overhead
        if _off(r.server_prompt, want_prompt, tolerance):
            found.append(
                f"{r.session}: prompt of {r.input_tokens} tokens (+{prompt_overhead} template) arrived as "
                f"{r.server_prompt} (usage.prompt_tokens); the client's tokenizer is not the server's"
            )
        if _off(r.output_tokens, r.server_completion, tolerance):
            found.append(
                f"{r.session}: AIPerf counted {r.output_tokens} output tokens, the server "
                f"{r.server_completion} (usage.completion_tokens)"
            )
    return found
