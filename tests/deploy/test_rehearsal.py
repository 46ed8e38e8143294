"""The CPU rehearsal's decisions, without starting SGLang: which of a plan's flags reach the CPU server
and why the others cannot, the tiny checkpoint's shape, and its tokenizer."""

from __future__ import annotations

import json

import pytest

from kimi_runbooks.deploy.errors import DeployError
from kimi_runbooks.deploy.rehearsal.cpu_flags import OwnFlag, cpu_flags, group_flags, server_flags
from kimi_runbooks.deploy.rehearsal.tiny_model import notes_for, tiny_config
from kimi_runbooks.kimi import k2_format as k2
from kimi_runbooks.kimi.hf_tokenizer import tokenizer_json
from kimi_runbooks.kimi.tiny_tokenizer import EXTRA_TOKENS, kimi_token_ids, write_kimi_tokenizer
from kimi_runbooks.plan import PlanConfig, plan

OURS = [
    OwnFlag("--model-path", "/tiny", "the tiny checkpoint"),
    OwnFlag("--host", "127.0.0.1", "loopback"),
    OwnFlag("--port", "4321", "free"),
    OwnFlag("--device", "cpu", "CPU engine"),
    OwnFlag("--context-length", "8192", "CPU-sized"),
    OwnFlag("--enable-metrics", None, "samples"),
]


def _rows(platform: str, **knobs: object) -> dict[str, tuple[str, str]]:
    flags = cpu_flags(plan(PlanConfig(platform=platform, **knobs)), {"K": "secret-value"}, OURS)
    return {d.item: (d.action, d.reason) for d in flags.dispositions}


def test_every_flag_and_env_of_the_ascend_plan_is_decided_with_a_reason():
    p = plan(PlanConfig(platform="ascend-a3"))
    flags = cpu_flags(p, {}, OURS)
    decided = {d.item for d in flags.dispositions}
    written = {g.flag for g in group_flags(server_flags(p.argv))}
    assert len(written) > 30 and written <= decided
    assert {f"env {name}" for name in p.launch_env} <= decided
    for d in flags.dispositions:
        assert d.action in ("passed", "replaced", "added", "not applicable")
        if d.action != "passed":
            assert d.reason, d
    rows = {d.item: d for d in flags.dispositions}
    assert rows["--tp-size"].action == "not applicable" and "tp 1" in rows["--tp-size"].reason
    assert rows["--speculative-algorithm"].action == "not applicable"
    assert rows["--device"].action == "replaced" and rows["--device"].reason.startswith("--device cpu")
    assert rows["--context-length"].action == "replaced" and "8192" in rows["--context-length"].reason
    assert rows["--disable-radix-cache"].action == "passed"  # serving behaviour reaches SGLang as planned
    assert rows["env HCCL_SOCKET_IFNAME"].action == "not applicable"
    # what reaches SGLang: the passed flags, then ours; nothing not applicable, no placeholder
    assert "--tp-size" not in flags.passed and "--attention-backend" not in flags.passed
    assert "--disable-radix-cache" in flags.passed and flags.passed[-1] == "--enable-metrics"
    assert not any("${" in a for a in flags.passed)


def test_an_option_the_rehearsal_sets_replaces_the_plans_value_once():
    p = plan(PlanConfig(platform="rtx-pro-6000"))  # plans --context-length 131072 and --enable-metrics
    flags = cpu_flags(p, {}, OURS)
    assert flags.passed.count("--context-length") == 1
    assert flags.passed[flags.passed.index("--context-length") + 1] == "8192"
    assert flags.passed.count("--enable-metrics") == 1
    rows = {d.item: d for d in flags.dispositions}
    assert rows["--quantization"].action == "not applicable" and "tiny BF16" in rows["--quantization"].reason
    assert rows["--moe-runner-backend"].action == "not applicable"


def test_the_api_key_reaches_sglang_but_never_a_record():
    p = plan(PlanConfig(platform="h200", api_key_env="K"))
    flags = cpu_flags(p, {"K": "secret-value"}, OURS)
    assert flags.passed[flags.passed.index("--api-key") + 1] == "secret-value"
    row = next(d for d in flags.dispositions if d.item == "--api-key")
    assert row.action == "passed" and row.values == ("<key>",)
    assert "secret-value" not in json.dumps([d.as_row() for d in flags.dispositions])


def test_an_unknown_flag_is_passed_for_sglang_to_judge():
    rows = _rows("h200", extra_args=["--enable-cache-report"])
    assert rows["--enable-cache-report"][0] == "passed"


def test_tiny_config_keeps_the_models_mla_proportions(catalog):
    model = catalog.models["kimi-k2.6"]
    arch = model.architecture
    cfg = tiny_config(model, 49169, 49152, 49153)
    assert cfg["architectures"] == ["DeepseekV3ForCausalLM"] and cfg["vocab_size"] % 64 == 0
    assert cfg["vocab_size"] >= 49169
    assert cfg["kv_lora_rank"] * arch.qk_rope_head_dim == cfg["qk_rope_head_dim"] * arch.kv_lora_rank
    # kv_lora_rank equal to qk_nope + qk_rope once hid a wrong attention path behind matching shapes
    assert cfg["kv_lora_rank"] != cfg["qk_nope_head_dim"] + cfg["qk_rope_head_dim"]
    assert cfg["num_hidden_layers"] == cfg["first_k_dense_replace"] + 2
    assert cfg["rope_scaling"]["factor"] * 4096 == arch.max_position_embeddings
    assert any("vision tower" in n for n in notes_for(model))


def test_a_hybrid_model_is_refused_with_the_fix(catalog):
    with pytest.raises(DeployError, match="launcher=emulator"):
        tiny_config(catalog.models["kimi-k3"], 49169, 0, 1)


def test_kimi_tokens_reuse_the_vocabularys_own_ids_and_follow_it_otherwise(run_folder):
    ids = kimi_token_ids()
    doc = tokenizer_json(extra_tokens=EXTRA_TOKENS)
    vocab = doc["model"]["vocab"]
    assert ids.turn_end == vocab["<|im_end|>"]  # SmolLM2 has <|im_end|>: one id, not two
    added = {t["content"]: t for t in doc["added_tokens"]}
    for token in k2.SPECIAL_TOKENS:
        assert added[token]["special"] is True
    for token in k2.PLAIN_ADDED_TOKENS:  # the kimi_k2 reasoning parser reads them from decoded text
        assert added[token]["special"] is False
    new_ids = sorted(t["id"] for t in doc["added_tokens"] if t["content"] not in vocab)
    assert new_ids == list(range(len(vocab), len(vocab) + len(new_ids)))
    assert ids.vocab_size == len(vocab) + len(new_ids)
    written = write_kimi_tokenizer(run_folder, run_folder.tiny_model)
    config = json.loads((run_folder.tiny_model / "tokenizer_config.json").read_text())
    assert written == ids and config["chat_template"] == k2.CHAT_TEMPLATE and config["eos_token"] == k2.EOS


def test_scripted_reply_is_what_the_kimi_k2_parsers_read():
    text = k2.scripted_reply("Check the city.", calls=[("get_weather", '{"city": "Paris"}')])
    assert text == (
        "<think>Check the city.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>'
    )
