"""Which scenarios the server's KV pool can hold: the planner's estimate, or the live pool size.

Matrix cells that cannot fit are recorded "over-capacity" and not run, as llm-inference-bench
does; the criterion is the planner's (tested against the published RTX PRO 6000 matrix).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import Scenario
from ..plan import CellFit, MemoryPlan
from ..target.locate import fetch_server_info


@dataclass(frozen=True)
class LiveInfo:
    """What /server_info says about the server right now (None when it is not reachable)."""

    max_total_num_tokens: int | None
    dp_ranks: int
    emulated: bool


def live_server_info(url: str, api_key: str | None = None, timeout: float = 5.0) -> LiveInfo | None:
    """What the capacity check needs from /server_info; None if the server does not answer."""
    info = fetch_server_info(url, api_key, timeout)
    if info is None:
        return None
    tokens = info.get("max_total_num_tokens")
    dp = int(info.get("dp_size") or 1) if info.get("enable_dp_attention") else 1
    return LiveInfo(int(tokens) if tokens else None, max(dp, 1), bool(info.get("emulated")))


def capacity_plan(memory_plan: MemoryPlan | None, live: LiveInfo | None) -> MemoryPlan | None:
    """The plan to check cells against: the live pool size when known, else the estimate."""
    if live is not None and live.max_total_num_tokens:
        if memory_plan is not None:
            return memory_plan.with_live_capacity(live.max_total_num_tokens, live.dp_ranks)
        return MemoryPlan(
            memory_gib=0.0,
            mem_fraction_static=0.0,
            usable_gib_per_device=0.0,
            weights_gib_per_device=0.0,
            draft_gib_per_device=0.0,
            runtime_reserve_gib=0.0,
            kv_budget_gib=0.0,
            kv_cache_dtype="unknown",
            kv_bytes_per_token=0,
            kv_pool_tokens=live.max_total_num_tokens,
            dp_attention_ranks=live.dp_ranks,
            source="live /server_info max_total_num_tokens",
        )
    return memory_plan


def cell_fit(scenario: Scenario, plan: MemoryPlan | None) -> CellFit | None:
    """Capacity check of a matrix cell: concurrency requests of context + output tokens at once.

    The same criterion the planner is tested with on the RTX PRO 6000 matrix (every cell that ran
    fits, every over-capacity cell does not). Only matrix cells are checked; other scenarios queue
    on a real server rather than fail, which is what their published numbers measured.
    """
    if plan is None or scenario.matrix is None:
        return None
    context = scenario.matrix.get("context_tokens", scenario.input_len or 0)
    concurrency = scenario.matrix.get("concurrency", scenario.max_concurrency or 1)
    return plan.fit(int(context), int(concurrency), int(scenario.output_len or 0))
