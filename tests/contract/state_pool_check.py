"""SGLang's own split of a hybrid (KDA + MLA) model's memory, for the cases in argv[1].

Usage (the bench tool env's python, which has the real ``sglang`` package):

    .venvs/bench/bin/python tests/contract/state_pool_check.py cases.json out.json

Each case gives the rest memory of one device (bytes, after weights and runtime slack), the
model's KDA and MLA geometry and the server flags. This script builds SGLang 0.5.23's ServerArgs
from those flags, publishes them in SGLang's runtime context, and runs, unchanged:
``KimiLinearStateShape.create`` + ``KimiLinearCacheParams.mamba_cache_per_req``
(srt/configs/mamba_utils.py), ``mamba2_state_dtype`` with ``--mamba-ssm-dtype`` applied as
srt/arg_groups/serving_hook.py does, ``KVCacheConfigurator._calculate_mamba_ratio``,
``_handle_max_mamba_cache`` and ``resolve_max_num_reqs`` (srt/mem_cache/kv_cache_configurator.py)
and ``calculate_mla_kv_cache_dim`` for the MLA cell. Only the configurator instance is a stand-in
(SimpleNamespace with the attributes those methods read): building a real one needs a GPU and the
weights. Writes one result per case.
"""

from __future__ import annotations

import argparse
import json
import sys
from types import SimpleNamespace
from typing import Any


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    import torch
    from sglang.srt.configs.mamba_utils import KimiLinearCacheParams, KimiLinearStateShape, mamba2_state_dtype
    from sglang.srt.environ import envs
    from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator, calculate_mla_kv_cache_dim
    from sglang.srt.runtime_context import get_context, get_schedule
    from sglang.srt.server_args import ServerArgs

    flags = ["--model-path", "/nonexistent-kimi-k3", *case["flags"]]
    parser = argparse.ArgumentParser()
    ServerArgs.add_cli_args(parser)
    server_args = ServerArgs.from_cli_args(parser.parse_args(flags))
    get_context().set_server_args(server_args)
    if server_args.mamba_ssm_dtype is not None:  # srt/arg_groups/serving_hook.py
        envs.SGLANG_MAMBA_SSM_DTYPE.set(server_args.mamba_ssm_dtype)
    else:
        envs.SGLANG_MAMBA_SSM_DTYPE.set(None)

    kda = case["kda"]
    shape = KimiLinearStateShape.create(
        tp_world_size=case["attn_tp"],
        num_heads=kda["num_heads"],
        head_dim=kda["head_dim"],
        conv_kernel_size=kda["short_conv_kernel_size"],
    )
    layers = list(range(kda["num_layers"]))  # only the count enters the pool size
    params = KimiLinearCacheParams(shape=shape, layers=layers, dtype=mamba2_state_dtype(None))

    fake = SimpleNamespace(
        mambaish_config=SimpleNamespace(mamba2_cache_params=params),
        pp_size=1,
        model_config=SimpleNamespace(num_hidden_layers=case["num_hidden_layers"], context_len=case["context_len"]),
        fused_entry_bytes=lambda name: None,
        spec_algorithm=SimpleNamespace(is_none=lambda: not case.get("speculative", False)),
        hybrid_gdn_config=None,
        hybrid_kda_config=object(),
        extra_mamba_cache_bytes_per_req=0,
        attn_dp_size=1,
    )
    fake._calculate_mamba_ratio = lambda: KVCacheConfigurator._calculate_mamba_ratio(fake)  # type: ignore[attr-defined]

    rest_gb = case["rest_bytes"] / (1 << 30)
    kv_rest_gb = KVCacheConfigurator._handle_max_mamba_cache(fake, rest_gb)  # type: ignore[arg-type]
    slots = get_schedule().max_mamba_cache_size

    kv_dtype = torch.float8_e4m3fn if case["kv_cache_dtype"] == "fp8_e4m3" else torch.bfloat16
    mla = SimpleNamespace(
        hf_config=SimpleNamespace(architectures=["KimiK3ForConditionalGeneration"]),
        kv_lora_rank=case["kv_lora_rank"],
        qk_rope_head_dim=case["qk_rope_head_dim"],
    )
    cell = calculate_mla_kv_cache_dim(model_config=mla, kv_cache_dtype=kv_dtype) * case["mla_layers"]
    cell *= torch._utils._element_size(kv_dtype)
    if case.get("draft_kv_bytes_per_token"):  # DSPARK: the draft's own KV pool shares the target's budget
        from sglang.srt.speculative.dflash_utils import scale_kv_cell_size_per_token_for_dflash

        cell = scale_kv_cell_size_per_token_for_dflash(  # pool_configurator.py, as a DSPARK target sizes it
            target_cell_size_per_token=int(cell),
            target_num_layers=case["mla_layers"],
            draft_num_layers=1,
            draft_cell_size_per_token=case["draft_kv_bytes_per_token"],
        )
    tokens = int(kv_rest_gb * (1 << 30)) // cell
    if server_args.max_total_tokens is not None:
        tokens = min(tokens, server_args.max_total_tokens)
    max_running = KVCacheConfigurator.resolve_max_num_reqs(fake, tokens)  # type: ignore[arg-type]
    return {
        "id": case["id"],
        "bytes_per_slot": int(params.mamba_cache_per_req),
        "slots_per_request": int(fake._calculate_mamba_ratio()),
        "slots": int(slots),
        "kv_rest_bytes": int(kv_rest_gb * (1 << 30)),
        "kv_bytes_per_token": int(cell),
        "kv_tokens": int(tokens),
        "max_running_requests": int(max_running),
    }


def main(argv: list[str]) -> int:
    cases = json.loads(open(argv[1], encoding="utf-8").read())
    results = []
    for case in cases:  # each case publishes its own server args in SGLang's runtime context
        results.append(run_case(case))
    import sglang

    with open(argv[2], "w", encoding="utf-8") as fh:
        json.dump({"sglang_version": sglang.__version__, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
