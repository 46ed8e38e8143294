"""How requests arrive: Poisson or evenly spaced, through SGLang 0.5.23's own benchmark client.

bench_serving 0.5.23 paces requests only one way: with a finite ``--request-rate`` it sleeps
``np.random.exponential(1 / rate)`` between sends (``get_request`` in sglang/benchmark/serving.py),
a Poisson process; ``inf`` sends everything at once. It has no ``--burstiness`` (the gamma-shaped
gaps of vLLM's benchmark_serving, vllm-project/vllm PR 10105, where a large burstiness tends to
constant gaps). The one schedule it replays exactly is a ``mooncake`` trace's: with ``--backend
sglang`` each record is sent at its ``timestamp`` (``get_mooncake_request_over_time``,
sglang/benchmark/datasets/mooncake.py), ``--request-rate`` ignored.

So ``arrival: constant`` is replayed as a generated mooncake trace: one single-round record per
prompt, ``timestamp`` k x 1000 / request_rate ms, ``output_length`` the scenario's, and hash ids of
its own (no shared prefix; bench_serving builds ~BLOCK_TOKENS tokens of prompt text per hash id, so
input_len is rounded up to whole blocks and the measured total_input_tokens says what was sent).
``arrival: poisson`` is bench_serving's own ``--request-rate``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from ..catalog import Scenario
from ..rundir import RunFolder

BLOCK_TOKENS = 130
"""Prompt tokens bench_serving makes of one hash id ("<id>" + 128 x " hi"; speed/traces.py too)."""
CONSTANT_ARGS = ("--mooncake-num-rounds", "1")


def is_constant(scenario: Scenario) -> bool:
    return scenario.arrival == "constant"


def constant_trace(scenario: Scenario) -> list[dict[str, Any]]:
    """The mooncake records of an evenly spaced arrival of num_prompts requests at request_rate."""
    rate = float(scenario.request_rate or 0)
    if not (math.isfinite(rate) and rate > 0) or not scenario.input_len or not scenario.output_len:
        raise ValueError(
            f"scenario {scenario.id}: constant arrivals need a finite request_rate, input_len and output_len. "
            "Fix: set them in params/scenarios."
        )
    blocks = max(math.ceil(scenario.input_len / BLOCK_TOKENS), 1)
    gap_ms = 1000.0 / rate
    return [
        {
            "timestamp": round(k * gap_ms, 3),
            "input_length": blocks * BLOCK_TOKENS,
            "output_length": scenario.output_len,
            "hash_ids": [k * blocks + j for j in range(blocks)],
        }
        for k in range(scenario.num_prompts)
    ]


def prepare_constant(scenario: Scenario, folder: RunFolder) -> tuple[Path, list[dict[str, Any]]]:
    """Write the scenario's constant-arrival trace into the run folder; (its path, its records)."""
    rows = constant_trace(scenario)
    path = folder.bench_output(scenario.id).with_suffix(".arrivals.jsonl")
    folder.mkdir(path.parent)
    folder.save_text(path, "".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def arrival_argv(scenario: Scenario, extra: dict[str, Any]) -> list[str]:
    """What a constant arrival adds to the command: one round per record and a flush after the
    warm-up (which sends the first record's prompt, so its measured copy would find it cached)."""
    if not is_constant(scenario):
        return []
    argv = [] if "--mooncake-num-rounds" in extra else list(CONSTANT_ARGS)
    return argv + ([] if "--flush-cache" in extra else ["--flush-cache"])
