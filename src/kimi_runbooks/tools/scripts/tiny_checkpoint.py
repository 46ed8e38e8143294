"""Write random BF16 weights for a tiny DeepseekV3ForCausalLM (Kimi-K2's text architecture), run in the
bench env (torch, safetensors): `python tiny_checkpoint.py DIR` reads DIR/config.json and writes
DIR/model.safetensors with every tensor SGLang's deepseek_v2.py load_weights expects for that config
(MLA with q/kv LoRA, a dense first block, routed experts + a shared expert, noaux_tc gate bias).

Weights are N(0, 0.02) from a fixed seed (the config's "kimi_runbooks_seed"), norms one, the gate
bias zero: the model writes fluent-looking nonsense, which is all a rehearsal needs from it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file


def tensors(cfg: dict[str, object]) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(int(cfg.get("kimi_runbooks_seed", 0)))  # type: ignore[arg-type]

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * 0.02).to(torch.bfloat16)

    def ones(n: int) -> torch.Tensor:
        return torch.ones(n, dtype=torch.bfloat16)

    c = {k: int(v) for k, v in cfg.items() if isinstance(v, int) and not isinstance(v, bool)}
    hidden, heads, vocab = c["hidden_size"], c["num_attention_heads"], c["vocab_size"]
    q_lora, kv_lora, rope = c["q_lora_rank"], c["kv_lora_rank"], c["qk_rope_head_dim"]
    nope, v_dim = c["qk_nope_head_dim"], c["v_head_dim"]
    out = {"model.embed_tokens.weight": rand(vocab, hidden), "model.norm.weight": ones(hidden)}
    out["lm_head.weight"] = rand(vocab, hidden)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        out[p + "input_layernorm.weight"] = ones(hidden)
        out[p + "post_attention_layernorm.weight"] = ones(hidden)
        a = p + "self_attn."
        out[a + "q_a_proj.weight"] = rand(q_lora, hidden)
        out[a + "q_a_layernorm.weight"] = ones(q_lora)
        out[a + "q_b_proj.weight"] = rand(heads * (nope + rope), q_lora)
        out[a + "kv_a_proj_with_mqa.weight"] = rand(kv_lora + rope, hidden)
        out[a + "kv_a_layernorm.weight"] = ones(kv_lora)
        out[a + "kv_b_proj.weight"] = rand(heads * (nope + v_dim), kv_lora)
        out[a + "o_proj.weight"] = rand(hidden, heads * v_dim)
        m = p + "mlp."
        if layer < c["first_k_dense_replace"]:
            for name, shape in mlp_shapes(c["intermediate_size"], hidden).items():
                out[m + name] = rand(*shape)
            continue
        out[m + "gate.weight"] = rand(c["n_routed_experts"], hidden)
        out[m + "gate.e_score_correction_bias"] = torch.zeros(c["n_routed_experts"], dtype=torch.float32)
        for expert in range(c["n_routed_experts"]):
            for name, shape in mlp_shapes(c["moe_intermediate_size"], hidden).items():
                out[f"{m}experts.{expert}.{name}"] = rand(*shape)
        shared = c["moe_intermediate_size"] * c["n_shared_experts"]
        for name, shape in mlp_shapes(shared, hidden).items():
            out[m + "shared_experts." + name] = rand(*shape)
    return out


def mlp_shapes(inner: int, hidden: int) -> dict[str, tuple[int, int]]:
    return {"gate_proj.weight": (inner, hidden), "up_proj.weight": (inner, hidden), "down_proj.weight": (hidden, inner)}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: tiny_checkpoint.py DIR (with DIR/config.json)", file=sys.stderr)
        return 2
    folder = Path(argv[0])
    cfg = json.loads((folder / "config.json").read_text())
    weights = tensors(cfg)
    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})
    count = sum(t.numel() for t in weights.values())
    print(json.dumps({"tensors": len(weights), "parameters": count}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
