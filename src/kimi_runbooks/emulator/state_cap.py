"""A hybrid model's running-request ceiling from its recurrent-state pool, as SGLang 0.5.23 sets it.

SGLang (python/sglang/srt/mem_cache/kv_cache_configurator.py ``resolve_max_num_reqs``) caps the
requests one DP worker runs at ``max_mamba_cache_size // slots per request`` when the model has
linear-attention layers, and logs "max_running_requests is capped to N by the mamba state cache ...";
the scheduler then runs at most that many and queues the rest (sglang:num_running_reqs /
sglang:num_queue_reqs). The emulator has no GPU memory to size the state pool from, so, like its KV pool
(``--max-total-num-tokens``), the slot count comes from the plan: the deploy stage passes
``--max-mamba-cache-size`` (an SGLang flag) with the planner's count (plan/state_pool.py). Slots per
request are read from the same flags by the planner's reader (plan/state_pool.py state_settings). Nothing here names a
model: a model is hybrid when its params/models entry has ``architecture.linear_attention``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..plan.state_pool import StateSettings
from ..plan.state_pool import state_settings as plan_state_settings
from .latency import LatencyProfile

if TYPE_CHECKING:
    from ..catalog import Model


def state_settings(launch_args: dict[str, Any]) -> StateSettings:
    """The state-pool flags among the emulator's SGLang launch args (snake_case keys), read by the
    planner's own reader (one reading of SGLang's flags; a value SGLang could not read is a
    ParamsError, a ValueError the CLI prints)."""
    return plan_state_settings({"--" + key.replace("_", "-"): value for key, value in launch_args.items()})


def attention_dp(launch_args: dict[str, Any]) -> int:
    """DP-attention workers: each has its own state pool of max_mamba_cache_size slots."""
    if not launch_args.get("enable_dp_attention"):
        return 1
    return max(int(launch_args.get("dp_size") or launch_args.get("dp") or 1), 1)


def state_cap(model: Model | None, launch_args: dict[str, Any]) -> int | None:
    """Requests the state pool admits, all DP workers together; None when the model is not hybrid or
    no slot count was given."""
    slots = launch_args.get("max_mamba_cache_size")
    if model is None or model.architecture.linear_attention is None or slots in (None, True, False):
        return None
    per_request = state_settings(launch_args).slots_per_request
    return max(int(slots) // per_request, 0) * attention_dp(launch_args)


SGLANG_ESTIMATE_FLOOR = 2048
"""resolve_max_num_reqs without --max-running-requests: max(min(tokens / context x 512, 4096), 2048)."""


def capped_profile(
    profile: LatencyProfile, model: Model | None, launch_args: dict[str, Any], requested: int | None = None
) -> tuple[LatencyProfile, str | None]:
    """The profile with its running limit lowered to the state pool's ceiling where that is lower, and
    SGLang's log line when the state pool is what capped it (`requested`: --max-running-requests; a
    predicted profile may already carry the cap, the line is still SGLang's)."""
    cap = state_cap(model, launch_args)
    if cap is None:
        return profile, None
    bound = min(requested or SGLANG_ESTIMATE_FLOOR, profile.max_total_num_tokens // 2)
    if cap >= bound:
        return profile, None
    if cap < 1:
        raise ValueError(
            f"the state pool admits no request (--max-mamba-cache-size {launch_args['max_mamba_cache_size']}, "
            f"{state_settings(launch_args).slots_per_request} state slots per request), as SGLang refuses to start. "
            "Fix: raise --max-mamba-cache-size or --mamba-full-memory-ratio"
        )
    slots = int(launch_args["max_mamba_cache_size"])
    per_request = state_settings(launch_args).slots_per_request
    line = (
        f"max_running_requests is capped to {cap // attention_dp(launch_args)} by the mamba state cache "
        f"(max_mamba_cache_size={slots}, {per_request} state slots per request). To raise it: increase "
        "--mamba-full-memory-ratio or --max-mamba-cache-size, or halve the state size with --mamba-ssm-dtype bfloat16."
    )
    if cap >= profile.max_running_requests:  # already capped (a predicted profile of the same plan)
        return profile, line
    source = f"{profile.source} + state pool ({slots} slots / {per_request} per request)"
    return replace(profile, max_running_requests=cap, source=source), line
