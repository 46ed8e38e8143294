"""Model geometry as the performance model needs it: parameters, bytes, FLOPs per token.

Everything is derived from params/models/<id>.yaml `architecture` (DeepSeek-V3 layout with MLA):
attention (q/kv low-rank projections), one dense FFN layer, then MoE layers with
`n_shared_experts` shared and `num_experts_per_tok` of `n_routed_experts` routed experts.
Bytes per parameter depend on the checkpoint's weight format (WEIGHT_BYTES).

A hybrid model (`architecture.linear_attention`, e.g. Kimi Delta Attention) differs in three ways:
* only its MLA layers keep KV that grows with the context; each linear-attention layer keeps a
  fixed recurrent state per request (plan/state_pool.py sizes it), read and written once per
  decode step and costing LINEAR_FLOPS_PER_STATE_ELEMENT FLOPs per state element per token,
  whatever the context;
* its projection dimensions are not all published, so every weight that is not a routed expert
  is counted from `parameter_counts` (active minus active routed experts) and read as bf16;
* routed experts may run at a latent width (`routed_expert_hidden_size`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._deps import GB, Model, kv_bytes_per_token, state_bytes_per_slot

WEIGHT_BYTES: dict[str, tuple[float, float]] = {
    # format: (routed-expert bytes per parameter, dense linear bytes per parameter)
    # int4: compressed-tensors W4A16, group 32, one bf16 scale per group -> 0.5 + 2/32
    "int4": (0.5 + 2 / 32, 2.0),
    # nvfp4: 4-bit values, one fp8 scale per 16 -> 0.5 + 1/16; attention and shared FFN bf16
    "nvfp4": (0.5 + 1 / 16, 2.0),
    # mxfp4 (OCP MX): 4-bit values, one E8M0 scale byte per 32 -> 0.5 + 1/32; dense bf16 (assumed)
    "mxfp4": (0.5 + 1 / 32, 2.0),
    # w4a8 (modelslim): INT4 experts with per-group scales (assumed like int4), dense bf16
    "w4a8": (0.5 + 2 / 32, 2.0),
    # fp8: block-quantized (128x128 blocks, negligible scales) for every linear layer
    "fp8": (1.0, 1.0),
}
"""Bytes per parameter; checked against each checkpoint's size in tests (within a few %)."""

EMBED_BYTES = 2.0  # embeddings and lm_head stay bf16 in every published checkpoint
LINEAR_FLOPS_PER_STATE_ELEMENT = 7.0
"""One token of a gated delta-rule layer per element of its head_dim x head_dim state: decay (1),
S^T k (2), the rank-1 update k v'^T (2), the read-out S^T q (2). A first-principles count."""


@dataclass(frozen=True)
class Geometry:
    layers: int
    moe_layers: int
    hidden: int
    heads: int
    experts: int
    experts_per_token: int
    attention_params_per_layer: float
    expert_params: float
    shared_params_per_moe_layer: float
    dense_ffn_params: float
    embed_params: float
    expert_bytes_per_param: float
    dense_bytes_per_param: float
    kv_bytes_per_token: float
    decode_attn_flops_per_ctx_token: float
    prefill_attn_flops_per_pair: float
    attention_layers: int = 0
    """Layers whose attention reads KV that grows with the context (MLA); 0: all layers."""
    linear_state_bytes: float = 0.0
    """Recurrent state of one request, all linear-attention layers, unsplit (divide by attention tp)."""
    linear_flops_per_token: float = 0.0
    """Linear-attention FLOPs per token, all layers, unsplit; independent of the context."""
    routed_hidden: int = 0
    """Width a routed expert's tokens are dispatched at (0: hidden)."""
    parameters_from_counts: bool = False
    """Non-expert weights counted from published totals (no per-projection breakdown)."""

    @property
    def context_layers(self) -> int:
        return self.attention_layers or self.layers

    @property
    def dispatch_hidden(self) -> int:
        return self.routed_hidden or self.hidden

    # ---------------------------------------------------------------- bytes
    @property
    def attention_bytes(self) -> float:
        """All layers' attention weights (MLA projections)."""
        return self.attention_params_per_layer * self.layers * self.dense_bytes_per_param

    @property
    def dense_ffn_bytes(self) -> float:
        """Dense FFN layers plus every MoE layer's shared experts."""
        params = self.dense_ffn_params + self.shared_params_per_moe_layer * self.moe_layers
        return params * self.dense_bytes_per_param

    @property
    def lm_head_bytes(self) -> float:
        return self.embed_params * EMBED_BYTES

    @property
    def expert_bytes(self) -> float:
        """One routed expert of one layer."""
        return self.expert_params * self.expert_bytes_per_param

    @property
    def total_bytes(self) -> float:
        routed = self.expert_bytes * self.experts * self.moe_layers
        return self.attention_bytes + self.dense_ffn_bytes + routed + 2 * self.lm_head_bytes

    # ---------------------------------------------------------------- flops
    @property
    def dense_flops_per_token(self) -> float:
        """Attention projections, dense/shared FFN and lm_head: 2 FLOPs per weight."""
        params = (
            self.attention_params_per_layer * self.layers
            + self.dense_ffn_params
            + self.shared_params_per_moe_layer * self.moe_layers
            + self.embed_params
        )
        return 2.0 * params

    @property
    def expert_flops_per_token(self) -> float:
        return 2.0 * self.expert_params * self.experts_per_token * self.moe_layers

    @property
    def active_params(self) -> float:
        return (self.dense_flops_per_token + self.expert_flops_per_token) / 2.0

    def distinct_experts(self, tokens: float) -> float:
        """Expected distinct routed experts one MoE layer touches for `tokens` tokens.

        Uniform routing: each expert is missed by one token with probability 1 - k/E,
        so the expected count is E x (1 - (1 - k/E)^tokens).
        """
        if tokens <= 0:
            return 0.0
        miss = 1.0 - self.experts_per_token / self.experts
        return float(self.experts * (1.0 - miss**tokens))


class NoPerformanceModelError(ValueError):
    """The model's geometry is outside what the performance model covers (e.g. a hybrid
    linear-attention model, or a field no public source gives)."""


def _known(value: int | None, model: Model, field: str) -> int:
    if value is None:
        why = model.sources.get(field, "no public source")
        raise NoPerformanceModelError(
            f"{model.id} has no {field} ({why}), so the performance model cannot predict it. "
            "Fix: plan without --predict"
        )
    return value


def geometry(model: Model, kv_cache_dtype: str, ssm_dtype: str = "float32") -> Geometry:
    a = model.architecture
    if a.linear_attention is not None or a.parameter_counts is not None and _unpublished_projections(model):
        return _counted_geometry(model, kv_cache_dtype, ssm_dtype)
    h, heads = a.hidden_size, a.num_attention_heads
    q_lora = _known(a.q_lora_rank, model, "q_lora_rank")
    nope = _known(a.qk_nope_head_dim, model, "qk_nope_head_dim")
    v_head = _known(a.v_head_dim, model, "v_head_dim")
    inter = _known(a.intermediate_size, model, "intermediate_size")
    vocab = _known(a.vocab_size, model, "vocab_size")
    qk_head = nope + a.qk_rope_head_dim
    attention = (
        h * q_lora
        + q_lora * heads * qk_head
        + h * (a.kv_lora_rank + a.qk_rope_head_dim)
        + a.kv_lora_rank * heads * (nope + v_head)
        + heads * v_head * h
    )
    expert = 3.0 * h * a.moe_intermediate_size
    moe_layers = a.num_hidden_layers - a.first_k_dense_replace
    expert_b, dense_b = WEIGHT_BYTES[model.weight_format]
    latent = a.kv_lora_rank + a.qk_rope_head_dim
    return Geometry(
        layers=a.num_hidden_layers,
        moe_layers=moe_layers,
        hidden=h,
        heads=heads,
        experts=a.n_routed_experts,
        experts_per_token=a.num_experts_per_tok,
        attention_params_per_layer=float(attention),
        expert_params=expert,
        shared_params_per_moe_layer=a.n_shared_experts * expert,
        dense_ffn_params=3.0 * h * inter * a.first_k_dense_replace,
        embed_params=float(vocab * h),
        expert_bytes_per_param=expert_b,
        dense_bytes_per_param=dense_b,
        kv_bytes_per_token=float(kv_bytes_per_token(model, kv_cache_dtype)),
        # absorbed MLA decode: scores over the latent+rope (576) and values over the latent (512)
        decode_attn_flops_per_ctx_token=2.0 * heads * (latent + a.kv_lora_rank) * a.num_hidden_layers,
        # prefill runs MHA on decompressed K/V: q.k over 192 dims, p.v over 128
        prefill_attn_flops_per_pair=2.0 * heads * (qk_head + v_head) * a.num_hidden_layers,
    )


def _unpublished_projections(model: Model) -> bool:
    a = model.architecture
    fields = (a.q_lora_rank, a.qk_nope_head_dim, a.v_head_dim, a.intermediate_size, a.vocab_size)
    return any(v is None for v in fields)


def _counted_geometry(model: Model, kv_cache_dtype: str, ssm_dtype: str) -> Geometry:
    """A model whose non-expert weights come from its published parameter counts (module docstring)."""
    a = model.architecture
    counts = a.parameter_counts
    if counts is None:
        raise NoPerformanceModelError(
            f"{model.id} publishes neither its projection dimensions ({_missing(model)}) nor "
            "architecture.parameter_counts (total / active parameters), so the performance model cannot "
            "count its weights. Fix: add parameter_counts with a public source to its params/models file, "
            "or plan without --predict"
        )
    routed_hidden = a.routed_expert_hidden_size or a.hidden_size
    expert = 3.0 * routed_hidden * a.moe_intermediate_size
    moe_layers = a.num_hidden_layers - a.first_k_dense_replace
    routed_active = expert * a.num_experts_per_tok * moe_layers
    non_routed = counts.active_b * 1e9 - routed_active
    if non_routed <= 0:
        raise NoPerformanceModelError(
            f"{model.id}: {counts.active_b:g}B active parameters are fewer than its active routed experts "
            f"({routed_active / 1e9:.1f}B). Fix: check parameter_counts and the expert geometry in its params file"
        )
    expert_b, dense_b = WEIGHT_BYTES[model.weight_format]
    mla = a.mla_layers
    heads, latent = a.num_attention_heads, a.kv_lora_rank + a.qk_rope_head_dim
    absorbed = 2.0 * heads * (latent + a.kv_lora_rank) * mla
    linear = a.linear_attention
    state = float(state_bytes_per_slot(linear, 1, ssm_dtype)) if linear else 0.0
    linear_flops = (
        LINEAR_FLOPS_PER_STATE_ELEMENT * linear.num_heads * linear.head_dim**2 * linear.num_layers if linear else 0.0
    )
    return Geometry(
        layers=a.num_hidden_layers,
        moe_layers=moe_layers,
        hidden=a.hidden_size,
        heads=heads,
        experts=a.n_routed_experts,
        experts_per_token=a.num_experts_per_tok,
        # every non-routed weight (attention of both kinds, shared experts, dense layer, latent
        # projections, lm_head) as one bf16 block split over tp: its breakdown is unpublished
        attention_params_per_layer=0.0,
        expert_params=expert,
        shared_params_per_moe_layer=0.0,
        dense_ffn_params=non_routed,
        embed_params=0.0,
        expert_bytes_per_param=expert_b,
        dense_bytes_per_param=dense_b,
        kv_bytes_per_token=float(kv_bytes_per_token(model, kv_cache_dtype)),
        decode_attn_flops_per_ctx_token=absorbed,
        # prefill attention counted in the absorbed (latent) form: the decompressed head dims
        # are unpublished, and the absorbed form is the larger FLOP count (an upper bound)
        prefill_attn_flops_per_pair=absorbed,
        attention_layers=mla,
        linear_state_bytes=state,
        linear_flops_per_token=linear_flops,
        routed_hidden=routed_hidden,
        parameters_from_counts=True,
    )


def _missing(model: Model) -> str:
    a = model.architecture
    names = ("q_lora_rank", "qk_nope_head_dim", "v_head_dim", "intermediate_size", "vocab_size")
    return ", ".join(n for n in names if getattr(a, n) is None) or "none"


def checkpoint_bytes(model: Model) -> float:
    """The checkpoint's size as params/models states it (bytes)."""
    return model.checkpoint_gb * GB
