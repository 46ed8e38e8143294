"""The KV-cache formula and the capacity planner against the one published pool bound (seed 003)."""

import pytest
import yaml

from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.memory import kv_bytes_per_token

PARAMS = REPO_ROOT / "params"


def test_kv_bytes_per_token_mla_formula(catalog):
    model = catalog.model("kimi-k2.6")
    assert kv_bytes_per_token(model, "bf16") == 70272
    assert kv_bytes_per_token(model, "fp8_e4m3") == 35136


def test_plan_json_memory_uses_checkpoint_default_kv_dtype(catalog):
    # NVFP4 declares an FP8 KV cache, so `auto` follows it; the INT4 checkpoint stays BF16.
    assert plan({"platform": "rtx-pro-6000"}).memory.kv_bytes_per_token == 35136
    assert plan({"platform": "h200"}).memory.kv_bytes_per_token == 70272
    assert plan({"platform": "h200", "kv_cache_dtype": "fp8_e4m3"}).memory.kv_bytes_per_token == 35136


def test_weights_shard_over_tp(catalog):
    h200 = plan({"platform": "h200"}).memory
    mi350x = plan({"platform": "mi350x"}).memory
    assert h200.weights_gib_per_device == pytest.approx(595e9 / 2**30 / 8)
    assert mi350x.weights_gib_per_device == pytest.approx(2 * h200.weights_gib_per_device)


def test_dp_attention_multiplies_distinct_tokens(catalog):
    single = plan({"platform": "b200", "model": "kimi-k2-instruct"}).memory
    dp = plan({"platform": "b200", "model": "kimi-k2-instruct", "dp": 4, "enable_dp_attention": True}).memory
    assert dp.kv_pool_tokens == single.kv_pool_tokens
    assert dp.kv_pool_tokens_total == 4 * single.kv_pool_tokens
    # 8 requests over 4 ranks need only 2 requests' worth per rank
    assert dp.fit(context_tokens=10_000, concurrency=8).tokens_needed_per_rank == 20_000


def test_live_server_info_overrides_estimate(catalog):
    memory = plan({"platform": "h200"}).memory.with_live_capacity(123_456)
    assert memory.kv_pool_tokens == 123_456
    assert memory.source.startswith("live")
    assert not memory.fit(100_000, 2).fits


def _matrix_reference():
    path = PARAMS / "references" / "matrix-rtx-pro-6000-k26-nvfp4.yaml"
    return yaml.safe_load(path.read_text())


def test_seed_003_matrix_every_run_cell_fits_and_every_over_capacity_cell_does_not():
    ref = _matrix_reference()
    launch = ref["launch"]
    memory = plan(
        {
            "platform": "rtx-pro-6000",
            "model": "kimi-k2.6-nvfp4",
            "tp": launch["tp"],
            "mem_fraction_static": launch["mem_fraction_static"],
            "context_length": launch["context_length"],
        }
    ).memory
    assert memory.kv_cache_dtype == "fp8_e4m3"  # no explicit KV dtype: the checkpoint's default
    decode = [r for r in ref["rows"] if r["phase"] == "decode"]
    assert len(decode) == 40
    mismatches = []
    for row in decode:
        cell = memory.fit(row["context_tokens"], row["concurrency"], ref["max_output_tokens"])
        ran = row["status"] in ("valid", "queued")
        if cell.fits != ran:
            mismatches.append((row["context_label"], row["concurrency"], row["status"], cell.tokens_needed_per_rank))
    assert not mismatches, f"pool {memory.kv_pool_tokens} tokens disagrees with seed 003 on {mismatches}"


def test_bf16_kv_would_not_explain_seed_003():
    # With BF16 KV the pool halves, so cells that did run (8K x 16) would not fit.
    ref = _matrix_reference()
    memory = plan({"platform": "rtx-pro-6000", "kv_cache_dtype": "bf16"}).memory
    assert not memory.fit(8192, 16, ref["max_output_tokens"]).fits
