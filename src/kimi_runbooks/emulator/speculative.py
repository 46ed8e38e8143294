"""Speculative decoding as SGLang 0.5.23 resolves it, for /server_info and the running limit.

SGLang's arg_groups/speculative_hook.py fills in what a launch leaves out: the algorithm upper-cased
(NEXTN and EAGLE become EAGLE); for DSPARK (_handle_dspark) one draft step, top-k 1, and a verify
window of gamma + 1 tokens, gamma being --speculative-dspark-block-size (the draft checkpoint's, else
DEFAULT_DSPARK_GAMMA); a --speculative-num-draft-tokens other than gamma + 1 is refused, as is a
block size <= 0. A speculative launch without --max-running-requests runs at most 48 requests
(plan/running_limit.py says which algorithms and where SGLang sets it).

The emulator's decode timing is per accepted token: its latency profile comes from the plan's
prediction (profile.py), whose speculative pool divides each verify step by the accept length
(perfmodel.predict.DEFAULT_ACCEPT_LENGTH, 2.5 tokens: assumed; SGLang's cookbook publishes none for
Kimi-K3's DSPARK cells).
"""

from __future__ import annotations

from typing import Any

from ..plan.running_limit import sglang_max_running_requests, speculative_sets_max_running

DEFAULT_DSPARK_GAMMA = 7
"""sglang/srt/speculative/dspark_components/dspark_config.py DEFAULT_DSPARK_GAMMA (0.5.23)."""


def resolve_speculative(launch_args: dict[str, Any]) -> dict[str, Any]:
    """The speculative fields SGLang's resolution sets for these launch args ({} without
    --speculative-algorithm); ValueError with SGLang's message where it refuses them."""
    algorithm = launch_args.get("speculative_algorithm")
    if not algorithm:
        return {}
    name = str(algorithm).upper()
    resolved: dict[str, Any] = {"speculative_algorithm": "EAGLE" if name in ("NEXTN", "EAGLE") else name}
    requested = launch_args.get("max_running_requests")
    running = sglang_max_running_requests(requested, speculative=speculative_sets_max_running(name))
    if requested is None and running is not None:
        resolved["max_running_requests"] = running
    if name == "DSPARK":
        resolved.update(_dspark(launch_args))
    return resolved


def _dspark(launch_args: dict[str, Any]) -> dict[str, Any]:
    block = launch_args.get("speculative_dspark_block_size")
    if block is not None and int(block) <= 0:
        raise ValueError(f"DSpark requires --speculative-dspark-block-size to be positive, got {block}.")
    gamma = int(block) if block is not None else DEFAULT_DSPARK_GAMMA
    window = gamma + 1
    given = launch_args.get("speculative_num_draft_tokens")
    if given is not None and int(given) != window:
        raise ValueError(
            f"DSpark speculative_num_draft_tokens must equal gamma + 1 (= {window} for gamma={gamma}), "
            f"but got speculative_num_draft_tokens={given}."
        )
    return {
        "speculative_num_steps": 1,
        "speculative_eagle_topk": 1,
        "speculative_num_draft_tokens": window,
    }
