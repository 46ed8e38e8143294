"""The state / KV split of a hybrid model, by hand from SGLang 0.5.23's formulas
(srt/configs/mamba_utils.py KimiLinearStateShape, srt/mem_cache/kv_cache_configurator.py
_handle_max_mamba_cache / _calculate_mamba_ratio / resolve_max_num_reqs); the contract test
tests/contract/test_state_pool.py runs SGLang's own code on the same inputs."""

from __future__ import annotations

import re

import pytest

from kimi_runbooks.catalog import LinearAttention, ParamsError
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.state_pool import StateSettings, split_rest_memory, state_bytes_per_slot

K3_KDA = LinearAttention(kind="kda", num_layers=69, num_heads=96, head_dim=128, short_conv_kernel_size=4, source="t")
GIB = 1024**3


def test_slot_bytes_by_hand() -> None:
    # tp 16: 6 heads; temporal 6 x 128 x 128 x 4 B; conv (4 - 1) x 3 x 6 x 128 x 2 B; 69 layers
    assert state_bytes_per_slot(K3_KDA, 16, "float32") == 69 * (6 * 128 * 128 * 4 + 3 * 3 * 6 * 128 * 2)
    assert state_bytes_per_slot(K3_KDA, 8, "bfloat16") == 69 * (12 * 128 * 128 * 2 + 3 * 3 * 12 * 128 * 2)
    with pytest.raises(ValueError, match="do not split over attention tp 5"):
        state_bytes_per_slot(K3_KDA, 5, "float32")


@pytest.mark.parametrize(
    ("settings", "slots"),
    [
        (StateSettings(), 5),
        (StateSettings(radix_strategy="extra_buffer"), 5),
        (StateSettings(radix_strategy="extra_buffer_lazy"), 4),
        (StateSettings(radix_strategy="no_buffer"), 3),
        (StateSettings(disable_radix_cache=True), 1),
        (StateSettings(radix_strategy="extra_buffer", disable_overlap_schedule=True), 4),
    ],
)
def test_slots_per_request(settings: StateSettings, slots: int) -> None:
    assert settings.slots_per_request == slots


def test_split_by_hand_and_conservation() -> None:
    rest = 40 * GIB
    pool = split_rest_memory(
        rest, K3_KDA, attn_tp=8, kv_bytes_per_token=27648, context_length=131072, settings=StateSettings()
    )
    slot = state_bytes_per_slot(K3_KDA, 8, "float32")
    budget = rest * 0.9 / 1.9
    assert pool.slots == int((budget - slot) // slot)
    assert pool.state_pool_bytes == (pool.slots + 1) * slot
    assert pool.state_pool_bytes + pool.kv_rest_bytes == rest
    assert pool.kv_tokens == pool.kv_rest_bytes // 27648
    assert pool.state_requests == pool.slots // 5
    # resolve_max_num_reqs: estimate clipped to [2048, 4096], then tokens // 2, then the state cap
    assert pool.max_running_requests == min(2048, pool.kv_tokens // 2, pool.state_requests)


def test_levers_move_the_pools_the_way_the_cookbook_says() -> None:
    def split(settings: StateSettings, kv: int = 27648) -> tuple[int, int]:
        pool = split_rest_memory(
            30 * GIB, K3_KDA, attn_tp=8, kv_bytes_per_token=kv, context_length=131072, settings=settings
        )
        return pool.state_requests, pool.kv_tokens

    base_requests, base_tokens = split(StateSettings())
    lazy_requests, lazy_tokens = split(StateSettings(radix_strategy="extra_buffer_lazy"))
    assert lazy_tokens == base_tokens and lazy_requests == pytest.approx(base_requests * 5 / 4, abs=1)
    bf16_requests, _ = split(StateSettings(ssm_dtype="bfloat16"))
    assert 1.8 < bf16_requests / base_requests < 2.0  # "about twice the state slots" (the conv state stays bf16)
    fp8_requests, fp8_tokens = split(StateSettings(), kv=27648 // 2)
    assert fp8_requests == base_requests and fp8_tokens == pytest.approx(2 * base_tokens, abs=1)
    more_state, less_kv = split(StateSettings(full_memory_ratio=2.0))
    assert more_state > base_requests and less_kv < base_tokens


def test_speculative_verify_states_are_reserved() -> None:
    plain = split_rest_memory(
        30 * GIB, K3_KDA, attn_tp=8, kv_bytes_per_token=27648, context_length=131072, settings=StateSettings()
    )
    spec = split_rest_memory(
        30 * GIB,
        K3_KDA,
        attn_tp=8,
        kv_bytes_per_token=27648,
        context_length=131072,
        settings=StateSettings(speculative_draft_tokens=8),
    )
    assert spec.slots < plain.slots and spec.spec_state_bytes > 0
    assert spec.max_running_requests <= 48  # unset --max-running-requests under speculation


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--mamba-full-memory-ratio", "$(x)", "is not a number"),
        ("--max-running-requests", '1"2', "is not an integer"),
        ("--mamba-ssm-dtype", "$(x)", "unknown --mamba-ssm-dtype"),
        ("--mamba-radix-cache-strategy", "a b", "unknown --mamba-radix-cache-strategy"),
    ],
)
def test_a_state_flag_sglang_could_not_read_is_a_params_error_naming_it(flag: str, value: str, says: str) -> None:
    """A user's --extra-arg reaches state_settings as text: a bad value is a ParamsError the CLI prints in
    one line (it was a ValueError traceback from float())."""
    with pytest.raises(ParamsError, match=re.escape(says)) as info:
        plan({"platform": "b300", "model": "kimi-k3", "extra_args": [flag, value]})
    assert flag in str(info.value) and "Fix:" in str(info.value)
