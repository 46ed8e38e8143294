"""Kimi-K3 and Kimi-K2.7-Code plans held to the SGLang cookbook's published cells.

The expected argv below are written out literally from the Kimi-K3 command generator
(https://docs.sglang.io/cookbook/autoregressive/Moonshotai/Kimi-K3; sgl-project/sglang
docs_new/src/snippets/configs/moonshotai/kimi-k3.jsx at commit 0722c4c0), with the page's
{{MODEL_NAME}} as the hub id and {{HOST_IP}} / {{PORT}} as the plan's 127.0.0.1 / 30000. They do
not read params/models/kimi-k3.yaml, so a transcription error there fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.plan import plan as plan_newest

SEED = "seed"
"""This module holds the cells of the revision the project first reproduced (0722c4c0, `--cookbook-revision
seed`); tests/cookbook holds every cell of the newest kept revision."""


def plan(fields: dict) -> object:  # type: ignore[type-arg]
    return plan_newest({"cookbook_revision": SEED, **fields})


K3_NODE_ENV = {
    "NCCL_MNNVL_ENABLE": "1",
    "NCCL_CUMEM_ENABLE": "1",
    "SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0",
    "SGLANG_K3_ATTN_RES_MODE": "jit",
    "SGLANG_MOE_FUSED_GATE_RADIX": "1",
}

H200_BALANCED = (
    "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp 16 --ep-size 16 "
    "--moe-runner-backend marlin --decode-attention-backend flashmla --enable-symm-mem "
    "--mem-fraction-static 0.85 --mamba-full-memory-ratio 0.9 --cuda-graph-max-bs 64 "
    "--reasoning-parser kimi_k3 --tool-call-parser kimi_k3 --host 127.0.0.1 --port 30000"
).split()

H200_HIGH_THROUGHPUT = (
    "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp 16 --ep-size 16 "
    "--moe-runner-backend marlin --decode-attention-backend flashmla --enable-symm-mem "
    "--mem-fraction-static 0.90 --mamba-full-memory-ratio 0.9 --mamba-radix-cache-strategy extra_buffer_lazy "
    "--cuda-graph-max-bs 256 --reasoning-parser kimi_k3 --tool-call-parser kimi_k3 --host 127.0.0.1 --port 30000"
).split()

B300_BALANCED = (
    "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp 8 --context-length 131072 "
    "--moe-runner-backend marlin --decode-attention-backend trtllm_mla --enable-symm-mem "
    "--mem-fraction-static 0.85 --cuda-graph-max-bs 128 --skip-server-warmup "
    "--reasoning-parser kimi_k3 --tool-call-parser kimi_k3 --host 127.0.0.1 --port 30000"
).split()

GB300_HIGH_THROUGHPUT = (
    "sglang serve --trust-remote-code --model-path moonshotai/Kimi-K3 --tp 8 --ep 8 --moe-a2a-backend megamoe "
    "--decode-attention-backend cutedsl_mla --enable-symm-mem --mem-fraction-static 0.85 "
    "--max-running-requests 64 --max-total-tokens 620000 --reasoning-parser kimi_k3 --tool-call-parser kimi_k3 "
    "--host 127.0.0.1 --port 30000"
).split()


def _node_tail(nnodes: int, rank: int) -> list[str]:
    return ["--nnodes", str(nnodes), "--node-rank", str(rank), "--dist-init-addr", "10.0.0.1:5000"]


def test_h200_two_nodes_is_the_balanced_cell_on_both_nodes_with_the_nic_env() -> None:
    p = plan({"platform": "h200", "model": "kimi-k3", "nnodes": 2, "node_ips": ["10.0.0.1", "10.0.0.2"]})
    assert p.ok, p.errors
    assert "verified" in p.cookbook and "balanced" in p.cookbook
    assert [n.argv for n in p.nodes] == [H200_BALANCED + _node_tail(2, 0), H200_BALANCED + _node_tail(2, 1)]
    for rank, node in enumerate(p.nodes):
        nic = {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "SGLANG_HOST_IP"}
        assert {k: v for k, v in node.env.items() if k not in nic} == K3_NODE_ENV
        assert node.env["SGLANG_HOST_IP"] == f"10.0.0.{rank + 1}"
        assert "IFNAME" in node.env["GLOO_SOCKET_IFNAME"]  # a required reference until --ifname is given
        assert "export GLOO_SOCKET_IFNAME=" in node.script or "GLOO_SOCKET_IFNAME=" in node.script


def test_h200_high_throughput_and_the_ifname_knob() -> None:
    p = plan(
        {
            "platform": "h200",
            "model": "kimi-k3",
            "nnodes": 2,
            "strategy": "high-throughput",
            "node_ips": ["10.0.0.1", "10.0.0.2"],
            "ifname": "bond0",
        }
    )
    assert p.ok, p.errors
    assert p.nodes[0].argv == H200_HIGH_THROUGHPUT + _node_tail(2, 0)
    assert p.nodes[1].env["NCCL_SOCKET_IFNAME"] == "bond0"
    assert p.memory.state_pool is not None and p.memory.state_pool.slots_per_request == 4


def test_b300_single_node_balanced_cell() -> None:
    p = plan({"platform": "b300", "model": "kimi-k3"})
    assert p.ok, p.errors
    assert p.argv == B300_BALANCED and p.env == {} and not p.nodes
    assert p.docker is not None and "lmsysorg/sglang:dev " in p.docker


def test_gb300_two_nodes_high_throughput_cell_over_mnnvl() -> None:
    p = plan({"platform": "gb300", "model": "kimi-k3", "nnodes": 2, "strategy": "high-throughput"})
    assert p.ok, p.errors
    assert [n.argv[: len(GB300_HIGH_THROUGHPUT)] for n in p.nodes] == [GB300_HIGH_THROUGHPUT] * 2
    assert p.env == {**K3_NODE_ENV, "SGLANG_OPT_DEEPGEMM_MEGA_MOE_NUM_MAX_TOKENS_PER_RANK": "20480"}
    # --max-total-tokens caps the KV side as SGLang's _apply_token_constraints does
    assert p.memory.kv_pool_tokens == 620000
    pool = p.memory.state_pool
    assert pool is not None and pool.max_running_requests == min(64, pool.state_requests)


def test_both_pools_are_in_the_text_and_json_plan() -> None:
    from kimi_runbooks.plan.view import format_plan

    p = plan({"platform": "b300", "model": "kimi-k3"})
    text = format_plan(p)
    assert "state pool (kda, 69 layers" in text and "MLA KV pool" in text
    assert "--mamba-radix-cache-strategy extra_buffer_lazy" in text  # the lever table
    body = p.as_dict()["memory"]
    assert body["state_pool"]["state_requests"] > 0 and body["state_pool"]["kv_tokens"] == body["kv_pool_tokens"]
    assert {lever["lever"] for lever in body["levers"]} >= {
        "--mamba-radix-cache-strategy extra_buffer_lazy",
        "--mamba-ssm-dtype bfloat16",
        "--kv-cache-dtype fp8_e4m3",
    }


def test_the_state_pool_caps_the_batch_warning() -> None:
    p = plan({"platform": "b300", "model": "kimi-k3"})
    pool = p.memory.state_pool
    assert pool is not None and pool.capped_by_state
    assert "state-pool-caps-batch" in [w.id for w in p.warnings]
    # a request limit below what the state pool admits is not capped by it
    capped = plan({"platform": "b300", "model": "kimi-k3", "extra_args": ["--max-running-requests", "16"]})
    assert capped.memory.state_pool is not None and capped.memory.state_pool.max_running_requests == 16
    assert "state-pool-caps-batch" not in [w.id for w in capped.warnings]


def test_unverified_low_latency_cell_plans_with_a_warning() -> None:
    p = plan({"platform": "b300", "model": "kimi-k3", "strategy": "low-latency"})
    assert p.ok, p.errors
    assert "cookbook-cell-unverified" in [w.id for w in p.warnings]
    assert "--speculative-algorithm" in p.argv and p.argv[p.argv.index("--speculative-dspark-block-size") + 1] == "7"
    pool = p.memory.state_pool
    assert pool is not None and pool.spec_state_bytes > 0  # DSPARK holds block + 1 verify states per request


@pytest.mark.parametrize("platform", ["b200", "gb200", "mi350x", "mi355x"])
def test_platform_without_a_cell_is_refused_naming_the_recipe_and_source(platform: str) -> None:
    p = plan({"platform": platform, "model": "kimi-k3"})
    refusal = [e for e in p.errors if e.id == "no-verified-cookbook-cell"]
    assert refusal, [e.id for e in p.errors]
    assert platform in refusal[0].message and "pending" in refusal[0].message
    assert "docs.sglang.io/cookbook/autoregressive/Moonshotai/Kimi-K3" in refusal[0].source


def test_allow_plans_a_platform_without_a_cell_with_a_warning() -> None:
    p = plan({"platform": "b200", "model": "kimi-k3", "allow": ["no-verified-cookbook-cell"]})
    assert "no-verified-cookbook-cell" in [w.id for w in p.warnings]
    assert "no-verified-cookbook-cell" not in [e.id for e in p.errors]
    assert p.argv[p.argv.index("--reasoning-parser") + 1] == "kimi_k3"  # the model's parsers, not kimi_k2


def test_a_strategy_the_platform_has_no_cell_for_lists_its_cells() -> None:
    p = plan({"platform": "b300", "model": "kimi-k3", "strategy": "high-throughput"})
    refusal = [e for e in p.errors if e.id == "no-verified-cookbook-cell"]
    assert refusal and "b300 / default / mxfp4 / balanced / 1 node" in refusal[0].message


def test_user_knobs_replace_the_cell_value_in_place() -> None:
    p = plan({"platform": "b300", "model": "kimi-k3", "mem_fraction_static": 0.9, "kv_cache_dtype": "fp8_e4m3"})
    assert p.argv[p.argv.index("--mem-fraction-static") + 1] == "0.9"
    assert p.argv.index("--kv-cache-dtype") < p.argv.index("--host")
    base = plan({"platform": "b300", "model": "kimi-k3"})
    assert p.memory.kv_bytes_per_token * 2 == base.memory.kv_bytes_per_token


def test_cli_done_when_commands() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kimi_runbooks.cli", "plan", "--cookbook-revision", SEED, *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    for args in (
        ["--platform", "h200", "--model", "kimi-k3", "--nodes", "2"],
        ["--platform", "b300", "--model", "kimi-k3"],
        ["--platform", "gb300", "--model", "kimi-k3", "--nodes", "2", "--strategy", "high-throughput"],
    ):
        proc = run(*args)
        assert proc.returncode == 0, proc.stderr
        assert "state pool" in proc.stdout and "MLA KV pool" in proc.stdout
    refused = run("--platform", "mi355x", "--model", "kimi-k3")
    assert refused.returncode == 2
    assert "no-verified-cookbook-cell" in refused.stderr and "Kimi-K3" in refused.stderr


# --------------------------------------------------------------------------- Kimi-K2.7-Code


def test_k27_code_on_amd_takes_tp4_and_refuses_tp8() -> None:
    p = plan({"platform": "mi350x", "model": "kimi-k2.7-code", "devices": 4})
    assert p.ok, p.errors
    assert p.argv[p.argv.index("--tp") + 1] == "4"
    assert p.argv[p.argv.index("--reasoning-parser") + 1] == "kimi_k2"
    assert "no-published-recipe" not in [w.id for w in p.warnings]
    refused = plan({"platform": "mi350x", "model": "kimi-k2.7-code", "tp": 8})
    assert "amd-aiter-mla-heads" in [e.id for e in refused.errors]


def test_model_files_carry_the_hybrid_and_reasoning_fields() -> None:
    catalog = load_catalog()
    k3, code = catalog.model("kimi-k3"), catalog.model("kimi-k2.7-code")
    linear = k3.architecture.linear_attention
    assert linear is not None and (linear.num_layers, k3.architecture.mla_layers) == (69, 24)
    assert k3.thinking == "always" and k3.reasoning_effort and k3.reasoning_effort.levels == ["low", "high", "max"]
    assert k3.reasoning_effort.default == "max" and k3.video and k3.reasoning_parser == "kimi_k3"
    assert code.thinking == "always" and code.preserve_thinking and code.architecture.linear_attention is None
    assert code.requirements == ["transformers>=4.57.1,<5.0.0"]
    for name in ("q_lora_rank", "qk_nope_head_dim", "v_head_dim", "vocab_size", "intermediate_size"):
        assert getattr(k3.architecture, name) is None and k3.sources[name].startswith("unverified")


def test_no_code_path_names_a_model() -> None:
    src = Path(__file__).resolve().parents[2] / "src" / "kimi_runbooks"
    offenders = [
        str(path)
        for path in src.rglob("*.py")
        for literal in ('"kimi-k3"', "'kimi-k3'", '"kimi-k2.7-code"', "'kimi-k2.7-code'")
        if literal in path.read_text(encoding="utf-8")
    ]
    assert offenders == []


def test_cell_flags_sglang_0523_does_not_know_are_warned() -> None:
    # the cells use --cuda-graph-max-bs, which SGLang 0.5.23's argparse refuses as ambiguous
    # (--cuda-graph-max-bs-decode / -prefill): the cells target the cookbook's dev image
    p = plan({"platform": "b300", "model": "kimi-k3"})
    warned = [w for w in p.warnings if w.id == "cookbook-flag-not-in-sglang-release"]
    assert len(warned) == 1 and "--cuda-graph-max-bs" in warned[0].message and "ambiguous" in warned[0].message
    assert p.ok  # the command stays the page's; the warning says where it differs from the release
    ht = plan({"platform": "gb300", "model": "kimi-k3", "nnodes": 2, "strategy": "high-throughput"})
    assert not [w for w in ht.warnings if w.id == "cookbook-flag-not-in-sglang-release"]


def test_h200_high_throughput_admits_what_the_cookbook_reports() -> None:
    """The page's H200 high-throughput cell (tp16 over 2x8 H200, --mem-fraction-static 0.90,
    extra_buffer_lazy, --mamba-full-memory-ratio 0.9) reports max_running 98. The plan agrees within
    10% once every tp rank also holds the weights SGLang replicates (the latent MoE projections and the
    router gate, ReplicatedLinear in srt/models/kimi_k3.py) and the checkpoint counts its BF16 parts."""
    p = plan({"platform": "h200", "model": "kimi-k3", "nnodes": 2, "strategy": "high-throughput"})
    pool = p.memory.state_pool
    assert pool is not None and pool.slots_per_request == 4 and pool.full_memory_ratio == 0.9
    assert abs(pool.max_running_requests - 98) <= 9.8, pool.max_running_requests
    model = load_catalog().model("kimi-k3")
    sharded = (model.checkpoint_gb - model.replicated_weights_gb) / 16 + model.replicated_weights_gb
    assert p.memory.weights_gib_per_device == pytest.approx(sharded * 1e9 / 2**30)


def test_dspark_draft_weights_and_kv_enter_the_memory_plan() -> None:
    """The page's speculative overlay (DSPARK with RadixArk/Kimi-K3-DSpark) loads a draft on every rank
    and keeps its own KV per token there (replicated): both come out of the KV budget."""
    base = plan({"platform": "b300", "model": "kimi-k3"})  # the balanced cell: the same server, no draft
    dspark = {"platform": "b300", "model": "kimi-k3", "strategy": "low-latency"}
    with_draft = plan({**dspark, "draft_model_path": "RadixArk/Kimi-K3-DSpark"})
    assert with_draft.argv[with_draft.argv.index("--speculative-draft-model-path") + 1] == "RadixArk/Kimi-K3-DSpark"
    draft = load_catalog().model("kimi-k3").draft_named("RadixArk/Kimi-K3-DSpark")
    assert draft is not None and draft.kv_bytes_per_token == 1400
    assert with_draft.memory.draft_gib_per_device == pytest.approx(draft.size_gb * 1e9 / 2**30 / 8)
    assert with_draft.memory.kv_bytes_per_token == base.memory.kv_bytes_per_token + 1400
    assert with_draft.memory.kv_budget_gib < base.memory.kv_budget_gib
    assert any("RadixArk/Kimi-K3-DSpark" in n for n in with_draft.memory.notes)
    # a draft params/models does not describe is said to be uncounted, not silently zero
    unknown = plan({**dspark, "draft_model_path": "someone/draft"})
    assert unknown.memory.draft_gib_per_device == 0.0
    assert any("someone/draft" in n and "not counted" in n for n in unknown.memory.notes)


def test_dcp_shards_the_mla_kv_over_its_ranks() -> None:
    """--dcp-size N keeps each token's MLA latent on one of N ranks (SGLang's allocator widens a rank's
    rows into N x as many token ids), so the same budget holds N x the tokens."""
    base = plan({"platform": "b300", "model": "kimi-k3"}).memory
    dcp = plan({"platform": "b300", "model": "kimi-k3", "extra_args": ["--dcp-size", "8"]}).memory
    assert dcp.kv_bytes_per_token == base.kv_bytes_per_token // 8
    assert dcp.kv_pool_tokens == pytest.approx(8 * base.kv_pool_tokens, rel=1e-4)
    assert any("--dcp-size 8" in n for n in dcp.notes)


def test_h100_is_a_platform_for_kimi_k3() -> None:
    """The page serves Kimi-K3 on 4 nodes of 8 H100 (80 GB): TP32/EP32 fits there."""
    h100 = load_catalog().platform("h100")
    assert h100.memory_gib < 80 and h100.devices_per_node == 8 and "kimi-k3" in h100.published_models
    p = plan({"platform": "h100", "model": "kimi-k3", "cookbook_revision": "newest"})  # the seed page had no H100
    assert p.ok, p.errors
    assert p.argv[p.argv.index("--tp-size") + 1] == "32" and len(p.nodes) == 4
    assert p.memory.kv_budget_gib > 0 and p.memory.state_pool is not None


def test_a_speculative_k3_plan_runs_at_most_48_like_sglang_without_extra_state_slots() -> None:
    """SGLang 0.5.23's _handle_dspark resets an unset --max-running-requests to 48 even when
    --enable-linear-replayssm-spec leaves speculation no extra state slots; the plan said 58."""
    on = plan({"platform": "b300", "model": "kimi-k3", "strategy": "low-latency", "cookbook_revision": "newest"})
    assert "--enable-linear-replayssm-spec" in on.command and "--max-running-requests" not in on.command
    assert on.memory.state_pool is not None and on.memory.state_pool.max_running_requests == 48
    told = plan(
        {
            "platform": "b300",
            "model": "kimi-k3",
            "strategy": "low-latency",
            "cookbook_revision": "newest",
            "extra_args": ["--max-running-requests", "56"],
        }
    )
    assert told.memory.state_pool is not None and told.memory.state_pool.max_running_requests == 56
