"""A tiny random-weight checkpoint of the plan's model, written into the run folder at deploy time.

The shape is the plan's model scaled down, as far as SGLang's CPU path serves it: Kimi-K2's text
architecture (DeepseekV3ForCausalLM: MLA with q/kv LoRA ranks in the model's proportions, a dense
first block, routed experts with a shared expert, sigmoid scoring with noaux_tc routing, YaRN rope
over the model's context), Kimi's special tokens and chat template (kimi/k2_format.py) on the
project's byte-level vocabulary. About 27 M parameters, mostly the embedding; written in ~3 s.
What the tiny checkpoint leaves out of the real one is said in `TinyModel.notes`.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...catalog import Model
from ...kimi.tiny_tokenizer import write_kimi_tokenizer
from ...rundir import RunFolder
from ...tools.envs import OFFLINE_ENV
from ...tools.scripts import script
from ..errors import DeployError

SCALE = 8
"""MLA ranks and head dims are the model's divided by this (Kimi-K2: kv_lora 512 -> 64, rope 64 -> 8)."""
HIDDEN, HEADS, EXPERTS, ACTIVE_EXPERTS, MOE_LAYERS = 256, 4, 8, 2, 2
DENSE_INTERMEDIATE, MOE_INTERMEDIATE = 512, 128
ORIGINAL_CONTEXT = 4096
ROUTING = {
    "topk_method": "noaux_tc",
    "scoring_func": "sigmoid",
    "n_group": 1,
    "topk_group": 1,
    "norm_topk_prob": True,
    "routed_scaling_factor": 2.827,
    "moe_layer_freq": 1,
    "hidden_act": "silu",
    "rope_theta": 50000.0,
}
"""Kimi-K2's routing and rope settings, from its config.json:
https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json"""
ROUTING_SOURCE = "https://huggingface.co/moonshotai/Kimi-K2-Instruct/blob/main/config.json"


@dataclass(frozen=True)
class TinyModel:
    directory: Path
    config: dict[str, Any]
    parameters: int
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        keys = (
            "num_hidden_layers",
            "hidden_size",
            "num_attention_heads",
            "kv_lora_rank",
            "q_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "v_head_dim",
            "n_routed_experts",
            "num_experts_per_tok",
            "n_shared_experts",
            "first_k_dense_replace",
            "vocab_size",
            "max_position_embeddings",
        )
        return {
            "directory": str(self.directory),
            "architecture": self.config["architectures"][0],
            "parameters": self.parameters,
            "shape": {k: self.config[k] for k in keys},
            "notes": self.notes,
        }


def _scaled(value: int | None, name: str, model: Model) -> int:
    if not value:
        raise DeployError(
            f"{model.id} has no {name} in params/models; the CPU rehearsal builds the MLA shape from it. "
            "Fix: use a Kimi-K2-family model (kimi-k2.6, kimi-k2-instruct, ...)."
        )
    return max(4, value // SCALE)


def tiny_config(model: Model, vocab_size: int, bos: int, eos: int, seed: int = 0) -> dict[str, Any]:
    """config.json of the tiny checkpoint for `model` (its MLA proportions, experts, context)."""
    arch = model.architecture
    if arch.linear_attention is not None:
        raise DeployError(
            f"{model.id} is a hybrid model ({arch.linear_attention.kind.upper()} linear attention + MLA); the CPU "
            "rehearsal serves Kimi-K2's architecture only (README: what runs against real SGLang). "
            "Fix: rehearse this model with launcher=emulator."
        )
    rope = _scaled(arch.qk_rope_head_dim, "qk_rope_head_dim", model)
    dense = min(arch.first_k_dense_replace, 1)
    return {
        "architectures": ["DeepseekV3ForCausalLM"],
        "model_type": "deepseek_v3",
        "vocab_size": -(-vocab_size // 64) * 64,
        "hidden_size": HIDDEN,
        "intermediate_size": DENSE_INTERMEDIATE,
        "moe_intermediate_size": MOE_INTERMEDIATE,
        "num_hidden_layers": dense + MOE_LAYERS,
        "first_k_dense_replace": dense,
        "num_attention_heads": HEADS,
        "num_key_value_heads": HEADS,
        "q_lora_rank": _scaled(arch.q_lora_rank, "q_lora_rank", model),
        "kv_lora_rank": _scaled(arch.kv_lora_rank, "kv_lora_rank", model),
        "qk_rope_head_dim": rope + rope % 2,
        "qk_nope_head_dim": _scaled(arch.qk_nope_head_dim, "qk_nope_head_dim", model),
        "v_head_dim": _scaled(arch.v_head_dim, "v_head_dim", model),
        "n_routed_experts": min(EXPERTS, arch.n_routed_experts),
        "num_experts_per_tok": min(ACTIVE_EXPERTS, arch.num_experts_per_tok),
        "n_shared_experts": arch.n_shared_experts,
        "max_position_embeddings": arch.max_position_embeddings,
        "rope_scaling": {
            "type": "yarn",
            "factor": arch.max_position_embeddings / ORIGINAL_CONTEXT,
            "original_max_position_embeddings": ORIGINAL_CONTEXT,
            "beta_fast": 1.0,
            "beta_slow": 1.0,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
        },
        **ROUTING,
        "rms_norm_eps": 1e-6,
        "bos_token_id": bos,
        "eos_token_id": eos,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "attention_bias": False,
        "kimi_runbooks_seed": seed,
        "kimi_runbooks_note": f"a tiny random-weight rehearsal checkpoint shaped like {model.id} (not its weights)",
    }


def notes_for(model: Model) -> list[str]:
    arch = model.architecture
    notes = [
        f"random weights: the tiny model writes nonsense, so accuracy and feature checks that need {model.id}'s "
        "answers fail by design",
        f"{MOE_LAYERS + min(arch.first_k_dense_replace, 1)} layers of {arch.num_hidden_layers}, hidden {HIDDEN} of "
        f"{arch.hidden_size}, {min(EXPERTS, arch.n_routed_experts)} routed experts of {arch.n_routed_experts}; MLA "
        f"ranks and head dims 1/{SCALE} of the model's; routing and rope as Kimi-K2's config.json ({ROUTING_SOURCE})",
    ]
    if model.multimodal:
        notes.append(f"text only: {model.id}'s vision tower is not part of the tiny checkpoint (no image input)")
    if model.weight_format != "fp8" or model.quantization_flag:
        notes.append(f"BF16 weights: {model.id}'s {model.weight_format} quantization is not rehearsed")
    return notes


def build_tiny_model(folder: RunFolder, model: Model, python: Path, *, timeout: float = 300.0) -> TinyModel:
    """Write the tokenizer, config and random weights into the run folder's tiny-model/ and return it.
    The weights come from the bench env's torch (`python`), as SGLang will read them."""
    dest = folder.mkdir(folder.tiny_model)
    ids = write_kimi_tokenizer(folder, dest)
    config = tiny_config(model, ids.vocab_size, ids.bos, ids.eos)
    folder.save_json(dest / "config.json", config)
    folder.save_json(
        dest / "generation_config.json", {"bos_token_id": ids.bos, "eos_token_id": [ids.eos, ids.turn_end]}
    )
    argv = [str(python), str(script("tiny_checkpoint.py")), str(dest)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **OFFLINE_ENV})
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeployError(f"writing the tiny checkpoint's weights failed: {exc}") from None
    if proc.returncode != 0:
        raise DeployError(
            f"writing the tiny checkpoint's weights failed (exit {proc.returncode}): {proc.stderr.strip()[-800:]}"
        )
    written = json.loads(proc.stdout.strip().splitlines()[-1])
    return TinyModel(dest, config, int(written["parameters"]), notes_for(model))
