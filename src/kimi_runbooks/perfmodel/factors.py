"""Efficiency factors: what the physics leaves out, fitted per platform family.

Seven numbers per family (params/perfmodel/calibration.yaml, written by
`python -m kimi_runbooks.perfmodel calibrate --write`):

* overhead_us: fixed time per layer per forward pass (kernel launches, synchronisation,
  collective latency) that no bandwidth or FLOP count explains; dominates small-batch decode.
* eta_bw: fraction of peak HBM bandwidth reached streaming the dense (attention, shared FFN,
  lm_head) weights.
* eta_moe: fraction of peak HBM bandwidth the decode routed-expert (fused MoE) kernels reach;
  the quantized expert paths differ most between platforms (dequantization, small-batch
  grouped GEMM tiling). Prefill's large-batch expert GEMMs read weights at eta_bw.
* eta_attn: efficiency of the decode attention kernel over the whole batch (latent KV read
  and score FLOPs against peak).
* attn_ns_per_token: latency of one request's attention per context token per layer when the
  batch is too small to fill the device (too few heads per device to spread one request's
  KV over all cores); the attention time is the larger of this and the batch term.
* eta_gemm: fraction of the dense peak reached by decode GEMMs (dense and experts).
* eta_prefill: fraction of the dense peak reached in prefill (GEMMs and attention).

A family without its own published results uses the global values (calibration.TRANSFERRED).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

FACTOR_NAMES = ("overhead_us", "eta_bw", "eta_moe", "eta_attn", "attn_ns_per_token", "eta_gemm", "eta_prefill")


@dataclass(frozen=True)
class Factors:
    overhead_us: float = 40.0
    eta_bw: float = 0.6
    eta_moe: float = 0.3
    eta_attn: float = 0.9
    attn_ns_per_token: float = 1.0
    eta_gemm: float = 0.05
    eta_prefill: float = 0.3

    def as_params(self) -> list[float]:
        """Coordinates for the fit: logs (an efficiency above 1 is read as 1)."""
        return [_to_param(name, getattr(self, name)) for name in FACTOR_NAMES]

    @classmethod
    def from_params(cls, values: list[float]) -> Factors:
        return cls(**{name: _from_param(name, v) for name, v in zip(FACTOR_NAMES, values)})

    def as_dict(self) -> dict[str, float]:
        return {f.name: float(f"{getattr(self, f.name):.6g}") for f in fields(self)}


def _to_param(name: str, value: float) -> float:
    return math.log(value)


def _from_param(name: str, value: float) -> float:
    """exp(value); an efficiency is capped at 1 (a fraction of the peak)."""
    return math.exp(min(value, 0.0)) if name.startswith("eta") else math.exp(value)


PRIOR = Factors()
"""Starting point of the fit, what a fit with no data at all returns, and what a family without
results keeps for the stack-specific factors (calibration.TRANSFERRED). eta_attn 0.9: a
memory-bound MLA decode kernel streams the latent KV at about 90% of peak bandwidth (FlashMLA:
"up to 3000 GB/s in memory-bound configuration" on an H800 SXM5 of 3.35 TB/s,
https://github.com/deepseek-ai/FlashMLA README); the others are round first guesses."""
