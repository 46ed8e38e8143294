"""Efficiency factors: hardware efficiencies bounded to their datasheet, software-stack terms by name.

The step model (step.py) reads seven effective numbers (`Factors`). They are composed
(`compose`) from two kinds of fitted parameter, each bounded to a documented range (RANGES) that
the fit cannot leave (calibration.py: bounded least squares; tests/perfmodel/test_factor_ranges.py):

* hardware efficiencies, a fraction of a datasheet figure, shared where the physics is shared:
  `hw.stream[<memory>]` (HBM / GDDR7 streaming, one per memory technology: dense weights, experts,
  latent KV), `hw.mma` (large GEMMs against the dense peak: one for every vendor), `hw.link`
  (collectives against the interconnect's per-direction figure: fixed, never fitted);
* software-stack terms, what the physics leaves out, keyed by the stack (stack.py) and shared by
  every platform that runs that stack: `stack.overhead_us[<graph mode>]` (fixed time per
  layer per pass), `stack.moe_kernel[<moe path>:<precision>]` (the decode fused-MoE kernel's
  fraction of streaming), `stack.small_batch_gemm[...]` (decode GEMMs at small M against hw.mma),
  `stack.prefill_kernels[...]` (prefill kernels against hw.mma), `stack.attn_latency_ns[<vendor>:
  <attention backend>]` (one request's attention latency per context token per layer).

    eta_bw = eta_attn = stream          eta_moe = stream x moe_kernel
    eta_gemm = mma x small_batch_gemm    eta_prefill = mma x prefill_kernels
    overhead_us, attn_ns_per_token = the stack terms

A parameter the fit left out (no fitted row read it, or its family's budget could not afford it) stays at
its prior (the middle of its range, RANGES.prior), except an expert-kernel term (POOLED_KINDS), which
borrows the fitted terms of its weight format on other MoE paths (`pooled`) that a measured row read
(`lenders`: a term fitted only to published SLO ceilings, Ascend's, lends nothing).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, fields

from .stack import Stack, vendor_of

FACTOR_NAMES = ("overhead_us", "eta_bw", "eta_moe", "eta_attn", "attn_ns_per_token", "eta_gemm", "eta_prefill")


@dataclass(frozen=True)
class Factors:
    """The effective numbers step.py reads (see the module docstring for what each is made of)."""

    overhead_us: float = 40.0
    eta_bw: float = 0.8
    eta_moe: float = 0.4
    eta_attn: float = 0.8
    attn_ns_per_token: float = 1.0
    eta_gemm: float = 0.06
    eta_prefill: float = 0.3

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(f"{getattr(self, f.name):.6g}") for f in fields(self)}


@dataclass(frozen=True)
class Range:
    lo: float
    hi: float
    prior: float
    prior_sd: float  # log-sd of the ridge towards the prior
    why: str
    source: str = ""
    fitted: bool = True


RANGES: dict[str, Range] = {
    "hw.stream": Range(
        0.5,
        0.95,
        0.8,
        0.3,
        "fraction of the datasheet memory bandwidth a streaming kernel reaches: tuned memory-bound kernels "
        "reach 80-93% (FlashMLA: 3000 GB/s on an H800 of 3.35 TB/s, 90%); below 50% the kernel, not the "
        "memory, is slow, and that belongs to a stack term",
        "https://github.com/deepseek-ai/FlashMLA (README: up to 3000 GB/s memory-bound on H800 SXM5)",
    ),
    "hw.mma": Range(
        0.2,
        0.9,
        0.6,
        0.3,
        "fraction of the dense tensor-core / matrix-core peak a large GEMM reaches: 60-80% for large "
        "well-shaped GEMMs, never the full peak (clock throttling, tile quantisation, wave quantisation); "
        "20% is the floor of a large-M GEMM of an awkward shape",
        "https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html "
        "(tile and wave quantisation)",
    ),
    "hw.link": Range(
        0.5,
        0.9,
        0.75,
        0.3,
        "fraction of the per-direction NVLink / xGMI / UB figure a ring all-reduce moves (NCCL's bus "
        "bandwidth, 75-85% of the link on large messages); fixed at 0.75, not fitted: no published row "
        "is dominated by communication",
        "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md (algorithm vs bus bandwidth)",
        fitted=False,
    ),
    "stack.overhead_us": Range(
        3.0,
        400.0,
        40.0,
        1.0,
        "fixed microseconds per layer per forward pass (kernel launches, host synchronisation, small "
        "collectives' latency): a Kimi-K2 layer runs 10-20 kernels, a few us each under CUDA/HIP graphs "
        "(30-100 us), up to a few hundred eager",
    ),
    "stack.moe_kernel": Range(
        0.05,
        1.0,
        0.5,
        1.0,
        "fraction of the memory's streaming efficiency the decode fused-MoE kernel reaches reading the "
        "routed experts (grouped small GEMMs, 4-bit dequantization): MoE kernel paths of one GPU differ "
        "2-7x (the ROCm blog's FlyDSL kernel against the Triton default)",
        "https://rocm.blogs.amd.com/artificial-intelligence/kimi-k2.5-optimize/README.html",
    ),
    "stack.small_batch_gemm": Range(
        0.005,
        1.0,
        0.1,
        1.5,
        "decode GEMMs at M = the batch's tokens against hw.mma: a tile of 64-128 rows computes whole tiles "
        "whatever M is, so efficiency falls near M/128 at small batches, and lower with dequantization",
        "https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html "
        "(tile quantisation)",
    ),
    "stack.prefill_kernels": Range(
        0.05,
        1.0,
        0.5,
        1.0,
        "prefill's expert and attention kernels against hw.mma (grouped GEMMs over routed tokens, the "
        "attention backend's prefill kernel)",
    ),
    "stack.attn_latency_ns": Range(
        0.05,
        100.0,
        1.0,
        1.5,
        "ns per context token per layer of ONE request's decode attention when the batch cannot fill the "
        "device (too few heads per device to spread one request's KV): the attention backend's split-KV "
        "scheduling",
    ),
}
KINDS = tuple(RANGES)
MEMORY_TECHNOLOGY = {"nvidia-rtx-blackwell": "gddr7"}
"""Platform families whose memory is not HBM (RTX PRO 6000: GDDR7); every other family is HBM."""


def kind_of(name: str) -> str:
    """'stack.moe_kernel[triton:W4]' -> 'stack.moe_kernel'."""
    return name.split("[", 1)[0]


def prior_of(name: str) -> float:
    return RANGES[kind_of(name)].prior


@dataclass(frozen=True)
class TermKeys:
    """The parameter names one (family, stack) prediction reads."""

    stream: str
    mma: str
    overhead: str
    moe: str
    gemm: str
    prefill: str
    attention: str

    def names(self) -> tuple[str, ...]:
        return (self.stream, self.mma, self.overhead, self.moe, self.gemm, self.prefill, self.attention)


def term_keys(family: str, stack: Stack) -> TermKeys:
    vendor, moe = vendor_of(family), stack.kernel_key()
    return TermKeys(
        stream=f"hw.stream[{MEMORY_TECHNOLOGY.get(family, 'hbm')}]",
        mma="hw.mma",
        overhead=f"stack.overhead_us[{stack.overhead_key(vendor)}]",
        moe=f"stack.moe_kernel[{moe}]",
        gemm=f"stack.small_batch_gemm[{moe}]",
        prefill=f"stack.prefill_kernels[{moe}]",
        attention=f"stack.attn_latency_ns[{stack.attention_key(vendor)}]",
    )


POOLED_KINDS = ("stack.moe_kernel", "stack.small_batch_gemm", "stack.prefill_kernels")
"""The expert-kernel terms, keyed by the kernel: MoE path, weight format and tuned (Stack.kernel_key)."""


def precision_of(name: str) -> str | None:
    """'stack.moe_kernel[flydsl:W4:tuned]' -> 'W4': the weight format an expert-kernel term
    shares with the other MoE paths (None for any other term)."""
    if kind_of(name) not in POOLED_KINDS or "[" not in name:
        return None
    parts = name[name.index("[") + 1 : -1].split(":")
    return parts[1] if len(parts) >= 2 else None


def borrowed_from(values: dict[str, float], name: str, lenders: Collection[str] | None = None) -> list[str]:
    """The fitted terms an expert-kernel term the fit left out borrows: the same kind and weight
    format on other MoE paths (the format sets the bytes read and the dequantization every path
    pays), among `lenders` (the terms measured rows read; None: every fitted term). Empty: it
    stays at its prior."""
    kind = kind_of(name)
    if kind not in POOLED_KINDS or name in values:
        return []
    precision, tuned = precision_of(name), is_tuned(name)
    return sorted(
        n
        for n in values
        if kind_of(n) == kind
        and precision_of(n) == precision
        and is_tuned(n) == tuned
        and (lenders is None or n in lenders)
    )


def is_tuned(name: str) -> bool:
    """A tuned kernel's term ('...:tuned]'): it borrows only from tuned kernels. A release path's
    inefficiency (the stock W4A16 MoE on Hopper streams its experts at a twentieth of the memory's rate)
    is what tuning removes, so a tuned kernel with no fit of its own stays at its prior, not at the
    stock path's value (issue 43 item 3: the tuned FlyDSL W4A16 stack borrowed it and was +176% at c40)."""
    return name.endswith(":tuned]")


def pooled(values: dict[str, float], name: str, lenders: Collection[str] | None = None) -> float:
    """A term the fit left out: the geometric mean of what it borrows from, else its prior."""
    sources = borrowed_from(values, name, lenders)
    if not sources:
        return prior_of(name)
    return math.exp(sum(math.log(values[n]) for n in sources) / len(sources))


def compose(values: dict[str, float], keys: TermKeys, lenders: Collection[str] | None = None) -> Factors:
    """The effective factors from the fitted parameters (where a name was not fitted: pooled from
    `lenders`, else its prior)."""

    def v(name: str) -> float:
        return values.get(name, pooled(values, name, lenders))

    stream, mma = v(keys.stream), v(keys.mma)
    return Factors(
        overhead_us=v(keys.overhead),
        eta_bw=stream,
        eta_moe=stream * v(keys.moe),
        eta_attn=stream,
        attn_ns_per_token=v(keys.attention),
        eta_gemm=mma * v(keys.gemm),
        eta_prefill=mma * v(keys.prefill),
    )


LINK_EFFICIENCY = RANGES["hw.link"].prior
PRIOR = compose({}, term_keys("nvidia-hopper", Stack()))
"""What a prediction with no calibration at all uses: every parameter at its prior."""


def out_of_range(values: dict[str, float]) -> list[str]:
    """Names whose value leaves its documented range (empty when every one holds)."""
    bad = []
    for name, value in values.items():
        r = RANGES[kind_of(name)]
        if not r.lo * (1 - 1e-9) <= value <= r.hi * (1 + 1e-9):
            bad.append(f"{name}={value:.4g} outside [{r.lo:g}, {r.hi:g}]")
    return bad
