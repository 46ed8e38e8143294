"""The recurrent-state pool of a hybrid model (Kimi Delta Attention layers), sized as SGLang 0.5.23
sizes it, and what it leaves for the paged MLA KV pool.

SGLang (python/sglang/srt/mem_cache/kv_cache_configurator.py, `_handle_max_mamba_cache`,
`_calculate_mamba_ratio`, `resolve_max_num_reqs`, sgl-project/sglang) splits the memory left after
the weights ("rest") once at start-up:

    state budget   = rest x r / (1 + r)               r = --mamba-full-memory-ratio (default 0.9)
    state slots K  = (state budget - slot) // slot     (the pool has one padding slot)
    KV rest        = rest - (K + 1) x slot
    requests       = min(max_running or SGLang's estimate, KV tokens // 2, K // slots per request)

One slot holds every KDA layer's state for one request (python/sglang/srt/configs/mamba_utils.py,
`KimiLinearStateShape.create`, `BaseLinearStateParams.mamba_cache_per_req`):

    slot = layers x ((heads / attn_tp) x head_dim^2 x ssm bytes
                     + (conv_kernel - 1) x 3 x (heads / attn_tp) x head_dim x conv bytes)

Slots per request (`_calculate_mamba_ratio` + `allocation_sizing.get_mamba_tracking_slots`): 3, plus
the radix cache's tracking slots: extra_buffer 2 (with the overlap scheduler, SGLang's default),
extra_buffer_lazy 1, no_buffer 0; a disabled radix cache needs 1. With speculative decoding each
admitted request also holds `speculative_num_draft_tokens` intermediate states, solved jointly.
A contract test (tests/contract/test_state_pool.py) runs SGLang's own functions on the same inputs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from ..catalog import GIB, LinearAttention
from ..catalog.values import ArgValue, ParamsError
from .running_limit import sglang_max_running_requests, speculative_sets_max_running

STATE_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
"""--mamba-ssm-dtype choices (SGLang 0.5.23 srt/configs/mamba_utils.py dtype_map); unset: float32."""

CONV_DTYPE_BYTES = 2
"""The conv state is bfloat16 unless SGLANG_MAMBA_CONV_DTYPE says otherwise (srt/environ.py)."""

RADIX_STRATEGIES = ("auto", "extra_buffer", "extra_buffer_lazy", "no_buffer")
BASE_SLOTS = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO in kv_cache_configurator.py
TRACKING_SLOTS = {"extra_buffer": 2, "extra_buffer_lazy": 1, "no_buffer": 0}
DEFAULT_FULL_MEMORY_RATIO = 0.9  # schedule.py: mamba_full_memory_ratio fallback=0.9

SOURCE = (
    "SGLang 0.5.23 python/sglang/srt/mem_cache/kv_cache_configurator.py (_handle_max_mamba_cache, "
    "_calculate_mamba_ratio, resolve_max_num_reqs) and srt/configs/mamba_utils.py (KimiLinearStateShape), "
    "sgl-project/sglang; levers as in the SGLang cookbook Kimi-K3, 2. Configuration Tips, "
    "https://docs.sglang.io/cookbook/autoregressive/Moonshotai/Kimi-K3"
)


@dataclass(frozen=True)
class StateSettings:
    """The server flags that size the state pool (each None/default as SGLang's)."""

    full_memory_ratio: float = DEFAULT_FULL_MEMORY_RATIO
    ssm_dtype: str = "float32"
    radix_strategy: str = "auto"
    disable_radix_cache: bool = False
    disable_overlap_schedule: bool = False
    speculative_draft_tokens: int = 0
    """Extra state slots a speculative request holds (0 with --enable-linear-replayssm-spec)."""
    speculative: bool = False
    """A --speculative-algorithm whose SGLang hook runs at most 48 requests unless told otherwise,
    whatever its state slots (running_limit.py; SGLang cookbook Kimi-K3, 2. Configuration Tips)."""
    max_running_requests: int | None = None
    max_total_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.ssm_dtype not in STATE_DTYPE_BYTES:
            choices = sorted(STATE_DTYPE_BYTES)
            raise ParamsError(f"unknown --mamba-ssm-dtype '{self.ssm_dtype}'. Fix: use one of {choices}")
        if self.radix_strategy not in RADIX_STRATEGIES:
            raise ParamsError(
                f"unknown --mamba-radix-cache-strategy '{self.radix_strategy}'. Fix: use one of {RADIX_STRATEGIES}"
            )

    @property
    def resolved_strategy(self) -> str:
        # srt/arg_groups/overrides.py: auto -> extra_buffer with the overlap scheduler on
        if self.radix_strategy == "auto":
            return "no_buffer" if self.disable_overlap_schedule else "extra_buffer"
        return self.radix_strategy

    @property
    def slots_per_request(self) -> int:
        if self.disable_radix_cache:
            return 1
        strategy = self.resolved_strategy
        if strategy == "extra_buffer" and self.disable_overlap_schedule:
            return BASE_SLOTS + 1
        return BASE_SLOTS + TRACKING_SLOTS[strategy]


def state_bytes_per_slot(linear: LinearAttention, attn_tp: int, ssm_dtype: str) -> int:
    """One request slot's recurrent state on one device, all linear-attention layers."""
    if linear.num_heads % attn_tp:
        raise ParamsError(
            f"{linear.num_heads} KDA heads do not split over attention tp {attn_tp}. "
            "Fix: use a tp (or tp / dp with DP attention) that divides the head count"
        )
    heads = linear.num_heads // attn_tp
    temporal = heads * linear.head_dim * linear.head_dim * STATE_DTYPE_BYTES[ssm_dtype]
    conv = (linear.short_conv_kernel_size - 1) * 3 * heads * linear.head_dim * CONV_DTYPE_BYTES
    return linear.num_layers * (temporal + conv)


@dataclass(frozen=True)
class StatePool:
    """The split of one device's rest memory between the state pool and the MLA KV pool."""

    kind: str
    layers: int
    attn_tp: int
    ssm_dtype: str
    radix_strategy: str
    slots_per_request: int
    full_memory_ratio: float
    bytes_per_slot: int
    slots: int
    """SGLang's max_mamba_cache_size (per DP-attention rank)."""
    state_pool_bytes: int
    spec_state_bytes: int
    state_requests: int
    """Requests the state pool admits: slots // slots per request."""
    kv_rest_bytes: int
    kv_tokens: int
    max_running_requests: int
    """What SGLang's resolve_max_num_reqs would settle on."""
    capped_by_state: bool
    """SGLang logs 'max_running_requests is capped to N by the mamba state cache'."""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["state_pool_gib"] = round(self.state_pool_bytes / GIB, 2)
        out["kv_pool_gib"] = round(self.kv_rest_bytes / GIB, 2)
        return out


def split_rest_memory(
    rest_bytes: int,
    linear: LinearAttention,
    *,
    attn_tp: int,
    kv_bytes_per_token: int,
    context_length: int,
    settings: StateSettings,
    attn_dp: int = 1,
) -> StatePool:
    """SGLang's split of `rest_bytes` (one device, after weights and runtime slack)."""
    per_slot = state_bytes_per_slot(linear, attn_tp, settings.ssm_dtype)
    ratio = settings.slots_per_request
    r = settings.full_memory_ratio
    budget = rest_bytes * r / (1 + r)
    draft = settings.speculative_draft_tokens
    # extra draft state slots come only with a speculative algorithm
    requested = sglang_max_running_requests(
        settings.max_running_requests, speculative=settings.speculative or draft > 0
    )
    spec_bytes = 0
    if draft > 0 and requested is not None:
        slots = int((budget - per_slot * (1 + draft)) // (per_slot * (1 + draft / ratio)))
        capped = min(max(1, requested // attn_dp), max(slots, 0) // ratio)
        spec_bytes = per_slot * (capped + 1) * draft
    else:
        slots = int((budget - per_slot) // per_slot)
    slots = max(slots, 0)
    state_bytes = (slots + 1) * per_slot if slots > 0 else 0
    kv_rest = max(rest_bytes - state_bytes - spec_bytes, 0)
    tokens = kv_rest // kv_bytes_per_token if kv_bytes_per_token else 0
    if settings.max_total_tokens is not None:
        tokens = min(tokens, settings.max_total_tokens)
    # resolve_max_num_reqs: SGLang's estimate, the token bound, then the state cap
    estimated = max(min(int(tokens / max(context_length, 1) * 512), 4096), 2048)
    bound = max(1, requested // attn_dp) if requested is not None else estimated
    before_state = min(bound, tokens // 2)
    state_requests = slots // ratio
    return StatePool(
        kind=linear.kind,
        layers=linear.num_layers,
        attn_tp=attn_tp,
        ssm_dtype=settings.ssm_dtype,
        radix_strategy=settings.resolved_strategy if not settings.disable_radix_cache else "disabled",
        slots_per_request=ratio,
        full_memory_ratio=r,
        bytes_per_slot=per_slot,
        slots=slots,
        state_pool_bytes=state_bytes,
        spec_state_bytes=spec_bytes,
        state_requests=state_requests,
        kv_rest_bytes=kv_rest,
        kv_tokens=tokens,
        max_running_requests=min(before_state, state_requests),
        capped_by_state=state_requests < before_state,
    )


def rest_bytes_of(budget_gib: float) -> int:
    return max(math.floor(budget_gib * GIB), 0)


N = TypeVar("N", int, float)


def _flag_number(lookup: dict[str, ArgValue | None], flag: str, kind: type[N]) -> N | None:
    """A numeric flag's value; a value SGLang could not read as one is the user's error, said as such."""
    value = lookup.get(flag)
    if value in (None, False):
        return None
    try:
        return kind(str(value))
    except ValueError:
        example = "64" if kind is int else "0.9"
        raise ParamsError(
            f"{flag} {value!r} is not {'an integer' if kind is int else 'a number'}, and SGLang reads it as one. "
            f"Fix: pass a number (e.g. {flag} {example}) or leave the flag out"
        ) from None


def state_settings(lookup: dict[str, ArgValue | None]) -> StateSettings:
    """The state-pool flags of a command (canonical flag -> value), as SGLang defaults them."""

    ratio = _flag_number(lookup, "--mamba-full-memory-ratio", float)
    draft = 0
    if lookup.get("--speculative-algorithm") not in (None, False):
        tokens = _flag_number(lookup, "--speculative-num-draft-tokens", int)
        block = _flag_number(lookup, "--speculative-dspark-block-size", int)
        # DSPARK verifies block + 1 tokens (SGLang cookbook Kimi-K3, 2. Configuration Tips: 'block size + 1 (= 8)')
        draft = tokens if tokens else (block + 1 if block else 0)
        if lookup.get("--enable-linear-replayssm-spec") not in (None, False):
            draft = 0
    return StateSettings(
        full_memory_ratio=ratio if ratio is not None else DEFAULT_FULL_MEMORY_RATIO,
        ssm_dtype=str(lookup.get("--mamba-ssm-dtype") or "float32"),
        radix_strategy=str(lookup.get("--mamba-radix-cache-strategy") or "auto"),
        disable_radix_cache=lookup.get("--disable-radix-cache") not in (None, False),
        disable_overlap_schedule=lookup.get("--disable-overlap-schedule") not in (None, False),
        speculative_draft_tokens=draft,
        speculative=speculative_sets_max_running(lookup.get("--speculative-algorithm")),
        max_running_requests=_flag_number(lookup, "--max-running-requests", int),
        max_total_tokens=_flag_number(lookup, "--max-total-tokens", int),
    )
