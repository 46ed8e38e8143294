"""Pipeline parallelism (--pp-size) from its own physics: stages, microbatches, boundary transfers.

How SGLang runs it (python/sglang/srt/managers/scheduler_pp_mixin.py, event_loop_pp): the layers
are split over `pp` stages of tp devices each; the scheduler keeps pp + --pp-async-batch-depth
(default 0) microbatches in flight, each of at most max_running_requests / pp requests
(scheduler.py, pp_max_micro_batch_size default), and every stage runs them in turn. A stage
sends its output activations to the next (PPProxyTensors: hidden_states and residual, bf16)
as a send-allgather: each of the stage's attention-tp ranks sends 1/attn_tp of them over its own
link and the receiving stage all-gathers them (parallel_state.send_tensor_dict, all_gather_group).
Chunked prefill pipelines the chunks of one request over the stages ("Different chunks of the same
request can be processed simultaneously by different nodes", https://docs.sglang.io/advanced_features/pipeline_parallelism.html;
https://www.lmsys.org/blog/2026-01-15-chunked-pipeline).

The model (balanced stages, ceil(layers / pp) layers on the deepest; the lm_head's stage is not
singled out):

* decode: m = min(batch, pp + depth) microbatches of batch / m requests. One microbatch's token
  crosses every stage once: the stages' passes sum to one all-layer pass at the microbatch's size
  (S), plus pp - 1 boundary transfers (X). A stage cannot start microbatch i + pp before i is
  done, so the cycle (the time between two tokens of a request) is
  max(S, m x S x depth_ratio / pp) + X, where depth_ratio = pp x ceil(L / pp) / L >= 1;
  the devices of one stage work m x S / pp of it, the rest is pipeline bubble (idle stage) or X;
* prefill of one request: chunk j costs t_j (all layers); a proportionate flow shop of pp stages
  finishes it in d x sum t_j + (1 - d) x max t_j, d = ceil(L / pp) / L (the deepest stage's
  share), plus the pp - 1 transfers of the largest chunk; the stage time (d x sum t_j) is what
  the pool is busy with, the rest the pipeline's fill and drain (bubbles).

Nothing published on a Kimi model validates these terms (predict.shape_basis says which result,
if any, covers a plan's shape); the balanced-stage assumption and the unmodelled per-hop latency
are the first things to question.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .attribution import add
from .comm import allgather_s, group_link
from .hardware import HardwareSpec
from .step import ACT_BYTES, PoolShape

PROXY_TENSORS = 2.0
"""hidden_states and residual cross each stage boundary (PPProxyTensors of DeepseekV2 models)."""
DEFAULT_ASYNC_DEPTH = 0
"""--pp-async-batch-depth default (python/sglang/srt/arg_groups/fields/parallel.py)."""


@dataclass(frozen=True)
class Stages:
    pp: int
    layers: int
    async_depth: int = DEFAULT_ASYNC_DEPTH

    @property
    def deepest_share(self) -> float:
        """Fraction of the layers on the deepest stage (SGLang splits them as evenly as it can)."""
        return math.ceil(self.layers / self.pp) / self.layers

    @property
    def depth_ratio(self) -> float:
        return self.pp * self.deepest_share

    def microbatches(self, batch: float) -> float:
        return min(max(batch, 1.0), float(self.pp + self.async_depth))


def boundary_s(tokens: float, hidden: int, hw: HardwareSpec, shape: PoolShape) -> float:
    """One stage boundary for `tokens` tokens: send 1/attn_tp of the proxy tensors per rank over
    the NIC (the device link when both stages share a node or one NVLink domain), then all-gather
    them inside the receiving stage."""
    message = tokens * hidden * ACT_BYTES * PROXY_TENSORS
    across = group_link(hw, shape.stage_crosses_nodes, shape.tp * shape.pp)
    ranks = shape.attention_tp
    return message / ranks / across + allgather_s(message, ranks, hw.link_bytes_per_s)


def decode_cycle(
    stages: Stages,
    batch: float,
    tokens_per_request: int,
    full_pass: Callable[[float], dict[str, float]],
    hidden: int,
    hw: HardwareSpec,
    shape: PoolShape,
) -> dict[str, float]:
    """One decode cycle of a pipelined replica at `batch` requests (module doc), as parts summing to
    the time between two tokens of one request; `full_pass(b)` gives the parts of one all-layer pass
    at b requests (every stage's pass, summed)."""
    m = stages.microbatches(batch)
    micro = batch / m if batch > 0 else 1.0
    passes = full_pass(micro)
    s = sum(passes.values())
    busy = max(s, m * s * stages.depth_ratio / stages.pp)
    transfers = (stages.pp - 1) * boundary_s(micro * tokens_per_request, hidden, hw, shape)
    worked = m * s / stages.pp
    return add(
        add(passes, scale=m / stages.pp),
        {"communication": transfers, "pipeline bubbles": busy - worked},
    )


def pipelined_prefill(
    stages: Stages,
    chunk_parts: list[dict[str, float]],
    chunk_tokens: list[float],
    hidden: int,
    hw: HardwareSpec,
    shape: PoolShape,
) -> tuple[dict[str, float], float]:
    """(parts of one request's prefill latency over the stages, seconds one stage is busy with it)."""
    d = stages.deepest_share
    totals = [sum(p.values()) for p in chunk_parts]
    work = add(*chunk_parts, scale=d)
    fill = (1.0 - d) * max(totals, default=0.0)
    transfers = (stages.pp - 1) * boundary_s(max(chunk_tokens, default=0.0), hidden, hw, shape)
    return add(work, {"pipeline bubbles": fill, "communication": transfers}), d * sum(totals)
