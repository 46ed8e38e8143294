"""Contract: the planner's hybrid-model memory split equals SGLang 0.5.23's own.

For the published Kimi-K3 cells and each capacity lever, the plan's state pool (bytes per slot,
slots per request, state slots) and MLA KV side (KV bytes per token, tokens, max running requests)
are compared with what SGLang's code computes from the same rest memory and flags
(tests/contract/state_pool_check.py, run by the bench tool env's python: KimiLinearStateShape,
mamba2_state_dtype, KVCacheConfigurator._calculate_mamba_ratio / _handle_max_mamba_cache /
resolve_max_num_reqs, calculate_mla_kv_cache_dim). They must agree exactly.

Declared inputs the planner supplies and SGLang's code does not derive here: the rest memory
(SGLang measures it on the GPU after loading the weights), the attention-TP width, the context
length, and `--mamba-radix-cache-strategy auto` passed resolved (auto -> extra_buffer needs the
checkpoint's hf_config in srt/arg_groups/overrides.py). Under speculative decoding an unset
`--max-running-requests` is passed as 48, the value the SGLang cookbook Kimi-K3 page says SGLang
resets it to.

Heavy: needs the bench tool env. Skipped without it; with CI=true a missing env is a failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import run_in_bench_env
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.launch_plan import LaunchPlan
from kimi_runbooks.plan.running_limit import SPECULATIVE_MAX_RUNNING

pytestmark = pytest.mark.heavy
HERE = Path(__file__).resolve().parent

PLANS: dict[str, dict[str, Any]] = {
    "h200-balanced": {"platform": "h200", "nnodes": 2},
    "h200-high-throughput": {"platform": "h200", "nnodes": 2, "strategy": "high-throughput"},
    "b300-balanced": {"platform": "b300"},
    "b300-low-latency": {"platform": "b300", "strategy": "low-latency"},
    "gb300-balanced": {"platform": "gb300", "nnodes": 2},
    "gb300-high-throughput": {"platform": "gb300", "nnodes": 2, "strategy": "high-throughput"},
    "b300-ssm-bf16": {"platform": "b300", "extra_args": ["--mamba-ssm-dtype", "bfloat16"]},
    "b300-lazy": {"platform": "b300", "extra_args": ["--mamba-radix-cache-strategy", "extra_buffer_lazy"]},
    "b300-fp8-kv": {"platform": "b300", "kv_cache_dtype": "fp8_e4m3"},
    "b300-ratio-2": {"platform": "b300", "extra_args": ["--mamba-full-memory-ratio", "2.0"]},
    "b300-no-buffer": {"platform": "b300", "extra_args": ["--mamba-radix-cache-strategy", "no_buffer"]},
    "b300-no-radix": {"platform": "b300", "extra_args": ["--disable-radix-cache"]},
    "h200-ht-mem-0.92": {"platform": "h200", "nnodes": 2, "strategy": "high-throughput", "mem_fraction_static": 0.92},
}

STATE_FLAGS = (
    "--mamba-full-memory-ratio",
    "--mamba-ssm-dtype",
    "--max-running-requests",
    "--max-total-tokens",
    "--speculative-algorithm",
    "--speculative-dspark-block-size",
    "--speculative-draft-model-path",
)
SWITCHES = ("--disable-radix-cache", "--disable-overlap-schedule")


def _case(case_id: str, p: LaunchPlan) -> dict[str, Any]:
    pool = p.memory.state_pool
    assert pool is not None
    linear = p.model.architecture.linear_attention
    assert linear is not None
    argv = p.argv
    flags: list[str] = []
    for flag in STATE_FLAGS:
        if flag in argv:
            flags += [flag, argv[argv.index(flag) + 1]]
    flags += [s for s in SWITCHES if s in argv]
    if pool.radix_strategy != "disabled":
        flags += ["--mamba-radix-cache-strategy", pool.radix_strategy]
    speculative = "--speculative-algorithm" in argv
    if speculative:
        block = int(argv[argv.index("--speculative-dspark-block-size") + 1])
        flags += ["--speculative-num-draft-tokens", str(block + 1)]
        if "--max-running-requests" not in argv:
            flags += ["--max-running-requests", str(SPECULATIVE_MAX_RUNNING)]
    arch = p.model.architecture
    # the draft's per-token KV as params/models gives it: SGLang reads it from the draft's config.json, which
    # is not here, and then adds it to the target's cell (pool_configurator.py, DFLASH/DSPARK)
    path = argv[argv.index("--speculative-draft-model-path") + 1] if "--speculative-draft-model-path" in argv else None
    draft = p.model.draft_named(path) if speculative else None
    return {
        "id": case_id,
        "flags": flags,
        "speculative": speculative,
        "kda": linear.model_dump(),
        "attn_tp": pool.attn_tp,
        "num_hidden_layers": arch.num_hidden_layers,
        "context_len": p.config.context_length or p.model.max_context_length,
        "rest_bytes": pool.state_pool_bytes + pool.spec_state_bytes + pool.kv_rest_bytes,
        "kv_cache_dtype": p.memory.kv_cache_dtype,
        "kv_lora_rank": arch.kv_lora_rank,
        "qk_rope_head_dim": arch.qk_rope_head_dim,
        "mla_layers": arch.mla_layers,
        "draft_kv_bytes_per_token": draft.kv_bytes_per_token if draft else 0,
    }


def test_pool_split_matches_sglang(bench_python: str, tmp_path: Path) -> None:
    plans = {cid: plan({"model": "kimi-k3", "cookbook_revision": "seed", **fields}) for cid, fields in PLANS.items()}
    for cid, p in plans.items():
        assert p.ok, (cid, [str(e) for e in p.errors])
    cases = [_case(cid, p) for cid, p in plans.items()]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    report = run_in_bench_env(
        bench_python, "state_pool_check.py", tmp_path / "cases.json", report=tmp_path / "out.json", ok_codes=(0,)
    )
    assert report["sglang_version"] == "0.5.23"
    differences = []
    for got in report["results"]:
        p = plans[got["id"]]
        pool = p.memory.state_pool
        assert pool is not None
        mine = {
            "bytes_per_slot": pool.bytes_per_slot,
            "slots_per_request": pool.slots_per_request,
            "slots": pool.slots,
            "kv_bytes_per_token": p.memory.kv_bytes_per_token,
            "kv_tokens": pool.kv_tokens,
            "max_running_requests": pool.max_running_requests,
        }
        differences += [(got["id"], key, value, got[key]) for key, value in mine.items() if got[key] != value]
        # SGLang carries the rest in float GiB; a byte or two of rounding is not a difference
        assert abs(got["kv_rest_bytes"] - pool.kv_rest_bytes) <= 4096, got["id"]
    assert differences == [], "planner vs SGLang (case, field, planner, SGLang): " + repr(differences)
    # the levers move SGLang's pools the way the cookbook says
    by_id = {r["id"]: r for r in report["results"]}
    base = by_id["b300-balanced"]
    assert by_id["b300-lazy"]["slots_per_request"] == 4 and base["slots_per_request"] == 5
    assert by_id["b300-ssm-bf16"]["slots"] > 1.8 * base["slots"]
    assert by_id["b300-fp8-kv"]["kv_tokens"] >= 2 * base["kv_tokens"] - 1
