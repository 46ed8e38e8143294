"""The --mamba-full-memory-ratio the Kimi-K3 page pins into its Deploy command.

Our port of the page's ratio calculator (sgl-project/sglang
docs_new/src/snippets/_kimi_k3_mamba_ratio_calculator.jsx, the version at 395187ca): the ratio
balances the KDA state pool against the MLA KV pool for an average request length (its input
field, default 11264 tokens), r = (S + D) x state_bytes / (L x kv_bytes_per_token_per_rank), with
every other term read off the command (tp, dp attention, dcp, dtypes, radix strategy, spec, PD
role). The Deploy panel takes the value computed from its own command (cell + overlays)."""

from __future__ import annotations

DEFAULT_REQUEST_LENGTH = 11264
"""The calculator's 'Average request length' input as the page loads (tokens, input + output)."""

KDA_LAYERS, KDA_HEADS, KDA_HEAD_DIM = 69, 96, 128
MLA_LAYERS, KV_LORA_RANK, QK_ROPE_HEAD_DIM = 24, 512, 64
DRAFT_KV_BYTES_PER_TOKEN = 1400
"""The DSPARK draft model's KV per token, replicated on every rank (the calculator's figure)."""


def _arg(flags: list[str], name: str) -> str | None:
    for flag in flags:
        parts = flag.split()
        if parts and parts[0] == name:
            return parts[1] if len(parts) > 1 else None
    return None


def _has(flags: list[str], name: str) -> bool:
    return any(flag.replace("=", " ").split()[0] == name for flag in flags if flag.strip())


def _number(text: str | None, default: float) -> float:
    try:
        value = float(text) if text is not None else 0.0
    except ValueError:
        return default
    return value or default


def ratio(flags: list[str], env: list[str], request_length: int = DEFAULT_REQUEST_LENGTH) -> float:
    """The balanced ratio for this command (before the page's formatting)."""
    tp = _number(_arg(flags, "--tp-size"), 8)
    dp = _number(_arg(flags, "--dp-size"), 1) if _has(flags, "--enable-dp-attention") else 1
    attn_tp = max(1, round(tp / dp))
    dcp = _number(_arg(flags, "--dcp-size"), 1)
    kv_bytes = 1 if _arg(flags, "--kv-cache-dtype") == "fp8_e4m3" else 2
    spec_on = _has(flags, "--speculative-algorithm")
    replay = _has(flags, "--enable-linear-replayssm-spec")
    ssm_bytes = 2 if _arg(flags, "--mamba-ssm-dtype") in ("bfloat16", "float16") else 4
    radix_off = _has(flags, "--disable-radix-cache")
    strategy = _arg(flags, "--mamba-radix-cache-strategy")
    strategy = strategy if strategy in ("no_buffer", "extra_buffer_lazy") else "extra_buffer"
    skip_lock = any(e.startswith("SGLANG_OPT_MAMBA_SKIP_DECODE_LOCK=1") for e in env)
    role = _arg(flags, "--disaggregation-mode")
    overlap_off = _has(flags, "--disable-overlap-schedule") or _number(_arg(flags, "--pp-size"), 1) > 1
    if role == "decode" or radix_off:
        slots = 1
    elif strategy == "no_buffer":
        slots = 3
    else:
        slots = 3 - (1 if skip_lock else 0) + (1 if overlap_off or strategy == "extra_buffer_lazy" else 2)
    block = _number(_arg(flags, "--speculative-dspark-block-size"), 7)
    drafts = block + 1 if spec_on and not replay and role != "prefill" else 0
    heads = KDA_HEADS / attn_tp
    state_bytes = KDA_LAYERS * (heads * KDA_HEAD_DIM * KDA_HEAD_DIM * ssm_bytes + 3 * 3 * heads * KDA_HEAD_DIM * 2)
    kv_per_token = MLA_LAYERS * (KV_LORA_RANK + QK_ROPE_HEAD_DIM) * kv_bytes
    kv_per_rank = kv_per_token / dcp + (DRAFT_KV_BYTES_PER_TOKEN if spec_on else 0)
    return (slots + drafts) * state_bytes / (kv_per_rank * request_length)


def page_text(value: float) -> str:
    """The value as the calculator prints it (>= 10: one decimal, >= 1: two, else two significant)."""
    if value >= 10:
        return f"{value:.1f}".removesuffix(".0")
    if value >= 1:
        text = f"{value:.2f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return repr(float(f"{value:.2g}"))
