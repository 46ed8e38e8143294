"""Memory and KV-cache capacity of a plan, before any server starts.

SGLang sizes the KV pool of an MLA model as (get_cell_size_per_token and profile_max_num_token in
python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py, sgl-project/sglang):

    pool bytes per device = total x mem_fraction_static - weights per device - runtime reserve
    bytes per token       = (kv_lora_rank + qk_rope_head_dim) x num_layers x dtype bytes

The latent KV is not split across TP ranks: every device of a TP group holds the whole cache of
its requests. With DP attention each DP rank serves its own requests, so the server holds about
dp x the per-device pool of distinct tokens. A live `/server_info` `max_total_num_tokens`
replaces the estimate once a server is up (`MemoryPlan.with_live_capacity`).

A hybrid model (params/models `architecture.linear_attention`) keeps MLA KV only in its MLA layers,
and SGLang first carves a recurrent-state pool out of the same budget (state_pool.py): the plan
then carries both pools and what each capacity lever would make of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from ..catalog import GB, GIB, Model, Platform
from .state_pool import SOURCE as STATE_POOL_SOURCE
from .state_pool import StatePool, StateSettings, rest_bytes_of, split_rest_memory

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


def kv_bytes_per_token(model: Model, kv_cache_dtype: str, dcp: int = 1) -> int:
    """Bytes one token of MLA latent KV takes on one device (all MLA layers), rounded up. Decode
    context parallel (--dcp-size) keeps each token's latent on one of its dcp ranks, so a device
    holds 1/dcp of it per token (SGLang's allocator widens a rank's rows into dcp x as many token
    ids: logical_token_capacity in srt/mem_cache/kv_cache_configurator.py)."""
    arch = model.architecture
    elements = (arch.kv_lora_rank + arch.qk_rope_head_dim) * arch.mla_layers
    return math.ceil(elements * kv_dtype_bytes(kv_cache_dtype) / max(dcp, 1))


@dataclass(frozen=True)
class CellFit:
    """Whether `concurrency` requests of `context + output` tokens fit the KV pool at once."""

    context_tokens: int
    concurrency: int
    output_tokens: int
    tokens_needed_per_rank: int
    capacity_per_rank: int

    @property
    def fits(self) -> bool:
        return self.tokens_needed_per_rank <= self.capacity_per_rank


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
    source: str = "estimate"
    notes: list[str] = field(default_factory=list)
    replicas: int = 1
    """Whole server replicas (`--dp` without DP attention), each with its own tp group and pool."""
    state_pool: StatePool | None = None
    """A hybrid model's recurrent-state pool and the split it leaves (None for pure-MLA models)."""
    levers: list[tuple[str, StatePool]] = field(default_factory=list)
    """(lever, the split with that lever added) for each capacity lever the plan does not use yet."""

    @property
    def pools(self) -> int:
        """Independent KV pools requests are spread over: DP-attention ranks x replicas."""
        return max(self.dp_attention_ranks, 1) * max(self.replicas, 1)

    @property
    def kv_pool_tokens_total(self) -> int:
        """KV tokens over all pools."""
        return self.kv_pool_tokens * self.pools

    def with_live_capacity(self, max_total_num_tokens: int, dp_ranks: int | None = None) -> MemoryPlan:
        """The same plan with SGLang's own pool size (GET /server_info) in place of the estimate;
        `dp_ranks`, when the server reports it, replaces the planned DP-attention rank count."""
        ranks = dp_ranks if dp_ranks and dp_ranks > 0 else self.dp_attention_ranks
        return replace(
            self,
            kv_pool_tokens=max_total_num_tokens,
            dp_attention_ranks=ranks,
            source="live /server_info max_total_num_tokens",
        )

    def fit(self, context_tokens: int, concurrency: int, output_tokens: int = 0) -> CellFit:
        """Requests are spread over DP-attention ranks and replicas; each pool's share must fit it."""
        per_rank_requests = math.ceil(concurrency / self.pools)
        needed = per_rank_requests * (context_tokens + output_tokens)
        return CellFit(context_tokens, concurrency, output_tokens, needed, capacity_per_rank=self.kv_pool_tokens)

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
            "state_pool": self.state_pool.as_dict() if self.state_pool else None,
            "levers": [{"lever": name, **pool.as_dict()} for name, pool in self.levers],
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
    state: StateSettings | None = None,
    context_length: int | None = None,
    draft_path: str | None = None,
    dcp: int = 1,
) -> MemoryPlan:
    """Estimate weights and KV pool per device. Weights are sharded evenly over tp x pp. A hybrid
    model's budget is first split with its state pool (`state`: the plan's state flags). With
    speculative decoding the draft the command names (`draft_path`) adds its weights (over tp x pp)
    and its own KV per token (on every rank); `dcp` (--dcp-size) splits the MLA KV of each token
    over that many ranks, so the pool holds dcp x as many tokens of it."""
    shards = max(tp * pp, 1)
    dcp = max(dcp, 1)
    weights = weights_gib_per_device(model, tp=tp, pp=pp)
    draft_model = model.draft_named(draft_path) if speculative else None
    draft = draft_model.size_gb * 1000**3 / GIB / shards if draft_model else 0.0
    draft_kv = draft_model.kv_bytes_per_token if draft_model else 0
    usable = platform.memory_gib * mem_fraction_static
    budget = usable - weights - draft - platform.runtime_reserve_gib
    per_token = kv_bytes_per_token(model, kv_cache_dtype, dcp=dcp) + draft_kv
    stage_layers = _stage_layers(model, pp)
    # a pipeline stage keeps the KV of its own layers only (SGLang sizes each rank's pool by its
    # num_effective_layers); the deepest stage, ceil(layers / pp), fills first
    pool = max(int(budget * GIB // (per_token * stage_layers / model.architecture.num_hidden_layers)), 0)
    ranks = max(dp_attention_ranks, 1)
    replicas = max(replicas, 1)
    replicated = model.replicated_weights_gb
    notes = [
        f"weights: {model.checkpoint_gb:g} GB checkpoint / {shards} devices"
        + (
            f", of which {replicated:g} GB every tp rank keeps whole ({model.replicated_weights_source})"
            if replicated and tp > 1
            else ""
        ),
        f"runtime reserve {platform.runtime_reserve_gib} GiB: {platform.runtime_reserve_source}",
    ]
    state_pool, levers = None, []
    linear = model.architecture.linear_attention
    if linear is not None:
        state = state or StateSettings()
        split: dict[str, Any] = {
            "linear": linear,
            "attn_tp": max(tp // ranks, 1),
            "context_length": context_length or model.max_context_length,
            "attn_dp": ranks,
        }
        rest = rest_bytes_of(budget)
        state_pool = split_rest_memory(rest, kv_bytes_per_token=per_token, settings=state, **split)
        levers = _levers(rest, model, kv_cache_dtype, state, split, dcp=dcp, draft_kv=draft_kv)
        pool = state_pool.kv_tokens
        budget = state_pool.kv_rest_bytes / GIB
        notes.append(
            f"hybrid: {linear.num_layers} {linear.kind} layers keep a recurrent state per request slot "
            f"({state_pool.bytes_per_slot / 2**20:.1f} MiB per slot per device), {model.architecture.mla_layers} "
            f"MLA layers keep paged KV; split by --mamba-full-memory-ratio {state.full_memory_ratio:g} "
            f"({STATE_POOL_SOURCE})"
        )
    if speculative and draft_model is None and draft_path:
        notes.append(f"draft {draft_path}: its size is not in params/models, so its weights and KV are not counted")
    elif draft_model is not None:
        notes.append(
            f"draft {draft_model.path}: {draft_model.size_gb:g} GB over {shards} devices ({draft_model.source})"
            + (f"; its KV {draft_kv} B per token on every rank ({draft_model.kv_source})" if draft_kv else "")
        )
    if dcp > 1:
        notes.append(
            f"--dcp-size {dcp}: each token's MLA KV is kept on one of {dcp} ranks, so a device holds "
            f"{kv_bytes_per_token(model, kv_cache_dtype, dcp=dcp)} of its "
            f"{kv_bytes_per_token(model, kv_cache_dtype)} bytes per token"
        )
    if pp > 1:
        notes.append(
            f"pp {pp}: each stage holds the KV of its own layers (at most {stage_layers} of "
            f"{model.architecture.num_hidden_layers}), so a device's pool holds more tokens than at pp 1"
        )
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
        notes=notes,
        replicas=replicas,
        state_pool=state_pool,
        levers=levers,
    )


def weights_gib_per_device(model: Model, *, tp: int, pp: int = 1) -> float:
    """The checkpoint's share on one device: sharded over tp x pp, except the weights SGLang
    replicates on every tp rank (params/models replicated_weights_gb), which only pp splits."""
    tp, pp = max(tp, 1), max(pp, 1)
    replicated = min(model.replicated_weights_gb, model.checkpoint_gb) * GB / GIB
    return (model.checkpoint_gib - replicated) / (tp * pp) + replicated / pp


def _stage_layers(model: Model, pp: int) -> int:
    """Layers on the deepest pipeline stage (SGLang's get_pp_indices splits them evenly, the
    remainder one each to the last stages)."""
    layers = model.architecture.num_hidden_layers
    return -(-layers // max(pp, 1))


def _levers(
    rest: int,
    model: Model,
    kv_cache_dtype: str,
    state: StateSettings,
    split: dict[str, Any],
    *,
    dcp: int = 1,
    draft_kv: int = 0,
) -> list[tuple[str, StatePool]]:
    """The split again with each capacity lever of the SGLang cookbook Kimi-K3 page (2. Configuration
    Tips) that the plan does not use yet, each alone."""
    per_token = kv_bytes_per_token(model, kv_cache_dtype, dcp=dcp) + draft_kv
    found: list[tuple[str, StatePool]] = []
    if state.radix_strategy != "extra_buffer_lazy" and not state.disable_radix_cache:
        lazy = replace(state, radix_strategy="extra_buffer_lazy")
        found.append(("--mamba-radix-cache-strategy extra_buffer_lazy", _split(rest, per_token, lazy, split)))
    if state.ssm_dtype == "float32":
        bf16 = replace(state, ssm_dtype="bfloat16")
        found.append(("--mamba-ssm-dtype bfloat16", _split(rest, per_token, bf16, split)))
    if kv_dtype_bytes(kv_cache_dtype) > 1:
        fp8 = kv_bytes_per_token(model, "fp8_e4m3", dcp=dcp) + draft_kv
        found.append(("--kv-cache-dtype fp8_e4m3", _split(rest, fp8, state, split)))
    for ratio in (0.5, 2.0):
        if ratio != state.full_memory_ratio:
            moved = replace(state, full_memory_ratio=ratio)
            found.append((f"--mamba-full-memory-ratio {ratio:g}", _split(rest, per_token, moved, split)))
    return found


def _split(rest: int, per_token: int, state: StateSettings, split: dict[str, Any]) -> StatePool:
    return split_rest_memory(rest, kv_bytes_per_token=per_token, settings=state, **split)
