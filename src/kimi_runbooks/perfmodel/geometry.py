"""Model geometry as the performance model needs it: parameters, bytes, FLOPs per token.

Everything is derived from params/models/<id>.yaml `architecture` (DeepSeek-V3 layout with MLA):
attention (q/kv low-rank projections), one dense FFN layer, then MoE layers with
`n_shared_experts` shared and `num_experts_per_tok` of `n_routed_experts` routed experts.
Bytes per parameter depend on the checkpoint's weight format (WEIGHT_BYTES).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._deps import GB, Model, kv_bytes_per_token

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


def geometry(model: Model, kv_cache_dtype: str) -> Geometry:
    a = model.architecture
    if a.linear_attention is not None:
        raise NoPerformanceModelError(
            f"{model.id} is a hybrid model ({a.linear_attention.num_layers} {a.linear_attention.kind} "
            f"linear-attention layers + {a.mla_layers} MLA): the performance model covers pure-MLA "
            "models only (issue 24 item 4 is not built). Fix: plan without --predict"
        )
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


def checkpoint_bytes(model: Model) -> float:
    """The checkpoint's size as params/models states it (bytes)."""
    return model.checkpoint_gb * GB
