"""What bounds a prediction: its TPOT and TTFT split into the model's own terms, as shares.

The split is the model's arithmetic read back, not a second estimate: every second of a decode
step or a prefill comes from one term of step.py (StepTime.parts), pipeline.py (stage transfers,
idle stages) or queueing.py (waiting), so the shares sum to 1 and the largest one names the number
to question first:

* weight streaming: weight bytes over HBM bandwidth (the memory side of the GEMM roofline, plus
  a speculative draft model's weights);
* KV reads: the latent KV (and a hybrid model's recurrent state) the attention reads, and one
  request's per-token attention latency;
* compute: GEMM and attention-score FLOPs over peak (the compute sides);
* communication: collectives inside a pool (tp all-reduce, ep all-to-all), activations crossing a
  pipeline stage boundary, and (TTFT, PD) the KV transfer from the prefill to the decode pool;
* fixed overhead: the per-layer time no byte or FLOP explains (launches, synchronisation);
* pipeline bubbles: pipeline stages idle, fewer microbatches in flight than stages, or stages of
  unequal depth (pipeline.py). A pipelined step is read from the devices' side: of one cycle, a
  stage works on m of its pp slots and idles the rest, so at batch 1 and pp 2 half the step is
  bubble. The request's own latency is the same as one stage-less pass plus the boundary
  transfers: the bubble is hardware a fuller pipeline would use, not time a request waits;
* prefill stalls (TPOT): a mixed pool runs waiting prefills before decode steps, so decode waits;
* queueing (TTFT): waiting for prefills ahead, or for a KV slot when the pool is full.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

CATEGORIES = (
    "weight streaming",
    "KV reads",
    "compute",
    "communication",
    "fixed overhead",
    "pipeline bubbles",
    "prefill stalls",
    "queueing",
)
SHARE_TOLERANCE = 1e-9


class AttributionError(ValueError):
    """Parts that cannot be shares (an unknown term, a negative or non-finite time)."""


@dataclass(frozen=True)
class Attribution:
    """One predicted metric (TPOT or TTFT) split into CATEGORIES: seconds and shares (sum 1)."""

    metric: str
    seconds: float
    shares: dict[str, float] = field(default_factory=dict)

    @property
    def bound(self) -> str:
        """The category with the largest share ("" when nothing was predicted)."""
        return max(self.shares, key=lambda k: self.shares[k]) if self.shares else ""

    def share(self, category: str) -> float:
        return self.shares.get(category, 0.0)

    def text(self, top: int = 3, min_share: float = 0.05) -> str:
        """'weight streaming 61%, fixed overhead 24%, KV reads 9%' (the largest first)."""
        ranked = sorted(self.shares.items(), key=lambda kv: -kv[1])
        shown = [f"{k} {v:.0%}" for k, v in ranked[:top] if v >= min_share] or [f"{k} {v:.0%}" for k, v in ranked[:1]]
        return ", ".join(shown)

    def as_dict(self) -> dict[str, float]:
        return {k: float(f"{v:.4g}") for k, v in self.shares.items()}


def attribution(metric: str, parts: Mapping[str, float]) -> Attribution:
    """Shares of `parts` (seconds per category); every category appears, zero where unused."""
    unknown = sorted(set(parts) - set(CATEGORIES))
    if unknown:
        raise AttributionError(f"unknown terms {unknown}. Fix: use one of {list(CATEGORIES)}")
    bad = {k: v for k, v in parts.items() if not math.isfinite(v) or v < -SHARE_TOLERANCE}
    if bad:
        raise AttributionError(f"{metric}: terms must be finite seconds >= 0, got {bad}")
    total = sum(max(v, 0.0) for v in parts.values())
    if total <= 0.0:
        return Attribution(metric, 0.0, {})
    return Attribution(metric, total, {k: max(parts.get(k, 0.0), 0.0) / total for k in CATEGORIES})


def add(*many: Mapping[str, float], scale: float = 1.0) -> dict[str, float]:
    """The sum of several parts dicts, times `scale`."""
    out: dict[str, float] = {}
    for parts in many:
        for k, v in parts.items():
            out[k] = out.get(k, 0.0) + v * scale
    return out


def with_remainder(metric: str, parts: Mapping[str, float], total: float, remainder: str) -> Attribution:
    """`total` (what queueing.py predicted) split as `parts` plus the rest as `remainder` (the
    time the model spends waiting: prefill stalls, queueing). A total below the parts (a median
    over requests that do not all take every part, e.g. a wave's first request) scales the
    parts down to it instead."""
    known = sum(parts.values())
    if not math.isfinite(total) or total <= 0.0 or known <= 0.0:
        return Attribution(metric, total if math.isfinite(total) else math.inf, {})
    rest = total - known
    if rest >= 0.0:
        return attribution(metric, {**parts, remainder: parts.get(remainder, 0.0) + rest})
    return attribution(metric, add(parts, scale=total / known))
