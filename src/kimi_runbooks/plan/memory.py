"""Memory and KV-cache capacity of a plan, before any server starts.

SGLang sizes the KV pool of an MLA model as (get_cell_size_per_token and profile_max_num_token in
python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py, sgl-project/sglang):

    pool bytes per device = total x mem_fraction_static - weights per device - runtime reserve
    bytes per token       = (kv_lora_rank + qk_rope_head_dim) x num_layers x dtype bytes

The latent KV is not split across TP ranks: every device of a TP group holds the whole cache of
its requests. With DP attention each DP rank serves its own requests, so the server holds about
dp x the per-device pool of distinct tokens. A live `/server_info` `max_total_num_tokens`
replaces the estimate once a server is up (`MemoryPlan.with_live_capacity`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from .catalog import GIB, Model, Platform

KV_CACHE_DTYPES = ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")
"""SGLang's `--kv-cache-dtype` choices (0.5.23, python/sglang/srt/server_args.py's CLI); a test
checks them against the installed SGLang's parser."""

KV_DTYPE_BYTES: dict[str, float] = {
    "auto": 2,  # the model dtype (bf16); the planner uses the model's default KV dtype for "auto"
    "bf16": 2,
    "bfloat16": 2,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "mxfp8": 1 + 1 / 32,  # OCP MX: one E8M0 scale byte per block of 32
    "nvfp4": 0.5 + 1 / 16,  # NVFP4: one FP8 scale byte per block of 16
    "fp4_mx_block16": 0.5 + 1 / 16,  # MX FP4 with blocks of 16: one E8M0 scale byte per block
}
"""Bytes per KV element, block scales included."""


def kv_dtype_bytes(kv_cache_dtype: str) -> float:
    try:
        return KV_DTYPE_BYTES[kv_cache_dtype]
    except KeyError:
        valid = ", ".join(KV_CACHE_DTYPES)
        raise ValueError(f"unknown KV cache dtype '{kv_cache_dtype}'. Fix: use one of {valid}") from None


def kv_bytes_per_token(model: Model, kv_cache_dtype: str) -> int:
    """Bytes one token of MLA latent KV takes on one device (all layers), rounded up."""
    arch = model.architecture
    elements = (arch.kv_lora_rank + arch.qk_rope_head_dim) * arch.num_hidden_layers
    return math.ceil(elements * kv_dtype_bytes(kv_cache_dtype))


@dataclass(frozen=True)
class CellFit:
    """Whether `concurrency` requests of `context + output` tokens fit the KV pool at once."""

    context_tokens: int
    concurrency: int
    output_tokens: int
    tokens_needed_per_rank: int
    capacity_per_rank: int
    fits: bool


@dataclass(frozen=True)
class MemoryPlan:
    memory_gib: float
    mem_fraction_static: float
    usable_gib_per_device: float
    weights_gib_per_device: float
    draft_gib_per_device: float
    runtime_reserve_gib: float
    kv_budget_gib: float
    kv_cache_dtype: str
    kv_bytes_per_token: int
    kv_pool_tokens: int
    dp_attention_ranks: int
    kv_pool_tokens_total: int
    source: str = "estimate"
    notes: list[str] = field(default_factory=list)
    replicas: int = 1
    """Whole server replicas (`--dp` without DP attention), each with its own tp group and pool."""

    @property
    def pools(self) -> int:
        """Independent KV pools requests are spread over: DP-attention ranks x replicas."""
        return max(self.dp_attention_ranks, 1) * max(self.replicas, 1)

    def with_live_capacity(self, max_total_num_tokens: int, dp_ranks: int | None = None) -> MemoryPlan:
        """The same plan with SGLang's own pool size (GET /server_info) in place of the estimate;
        `dp_ranks`, when the server reports it, replaces the planned DP-attention rank count."""
        ranks = dp_ranks if dp_ranks and dp_ranks > 0 else self.dp_attention_ranks
        return replace(
            self,
            kv_pool_tokens=max_total_num_tokens,
            dp_attention_ranks=ranks,
            kv_pool_tokens_total=max_total_num_tokens * ranks * max(self.replicas, 1),
            source="live /server_info max_total_num_tokens",
        )

    def fit(self, context_tokens: int, concurrency: int, output_tokens: int = 0) -> CellFit:
        """Requests are spread over DP-attention ranks and replicas; each pool's share must fit it."""
        per_rank_requests = math.ceil(concurrency / self.pools)
        needed = per_rank_requests * (context_tokens + output_tokens)
        return CellFit(
            context_tokens=context_tokens,
            concurrency=concurrency,
            output_tokens=output_tokens,
            tokens_needed_per_rank=needed,
            capacity_per_rank=self.kv_pool_tokens,
            fits=needed <= self.kv_pool_tokens,
        )

    def fit_matrix(self, contexts: list[int], concurrencies: list[int], output_tokens: int = 0) -> list[CellFit]:
        return [self.fit(c, n, output_tokens) for c in contexts for n in concurrencies]

    def as_dict(self) -> dict[str, Any]:
        return {
            "memory_gib_per_device": round(self.memory_gib, 2),
            "mem_fraction_static": self.mem_fraction_static,
            "usable_gib_per_device": round(self.usable_gib_per_device, 2),
            "weights_gib_per_device": round(self.weights_gib_per_device, 2),
            "draft_gib_per_device": round(self.draft_gib_per_device, 2),
            "runtime_reserve_gib": self.runtime_reserve_gib,
            "kv_budget_gib": round(self.kv_budget_gib, 2),
            "kv_cache_dtype": self.kv_cache_dtype,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_pool_tokens": self.kv_pool_tokens,
            "dp_attention_ranks": self.dp_attention_ranks,
            "replicas": self.replicas,
            "kv_pool_tokens_total": self.kv_pool_tokens_total,
            "source": self.source,
            "notes": list(self.notes),
        }


def plan_memory(
    platform: Platform,
    model: Model,
    *,
    tp: int,
    pp: int = 1,
    mem_fraction_static: float,
    kv_cache_dtype: str,
    dp_attention_ranks: int = 1,
    speculative: bool = False,
    replicas: int = 1,
) -> MemoryPlan:
    """Estimate weights and KV pool per device. Weights are sharded evenly over tp x pp."""
    shards = max(tp * pp, 1)
    weights = model.checkpoint_gib / shards
    draft = 0.0
    if speculative and model.draft_model is not None:
        draft = model.draft_model.size_gb * 1000**3 / GIB / shards
    usable = platform.memory_gib * mem_fraction_static
    budget = usable - weights - draft - platform.runtime_reserve_gib
    per_token = kv_bytes_per_token(model, kv_cache_dtype)
    pool = max(int(budget * GIB // per_token), 0)
    ranks = max(dp_attention_ranks, 1)
    replicas = max(replicas, 1)
    notes = [
        f"weights: {model.checkpoint_gb:g} GB checkpoint / {shards} devices",
        f"runtime reserve {platform.runtime_reserve_gib} GiB: {platform.runtime_reserve_source}",
    ]
    if replicas > 1:
        notes.append(
            f"{replicas} replicas: each holds the whole checkpoint on its {shards} devices and its own KV pool"
        )
    return MemoryPlan(
        memory_gib=platform.memory_gib,
        mem_fraction_static=mem_fraction_static,
        usable_gib_per_device=usable,
        weights_gib_per_device=weights,
        draft_gib_per_device=draft,
        runtime_reserve_gib=platform.runtime_reserve_gib,
        kv_budget_gib=budget,
        kv_cache_dtype=kv_cache_dtype,
        kv_bytes_per_token=per_token,
        kv_pool_tokens=pool,
        dp_attention_ranks=ranks,
        kv_pool_tokens_total=pool * ranks * replicas,
        notes=notes,
        replicas=replicas,
    )
