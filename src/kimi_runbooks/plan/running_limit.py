"""SGLang's max_running_requests before its scheduler sizes anything: the flag when given, else the
48 a speculative launch gets. The plan's memory (state_pool.py), the performance model's pools and
the emulator read it here, so the rule has one copy.

SGLang 0.5.23 (python/sglang/srt/arg_groups/speculative_hook.py, sgl-project/sglang, as installed in
.venvs/bench; dispatched by SpeculativeAlgorithm.handle_server_args in srt/speculative/spec_info.py):
_handle_eagle_family (EAGLE, EAGLE3, STANDALONE; NEXTN is an alias of EAGLE), _handle_dspark,
_handle_dflash, _handle_frozen_kv_mtp and _handle_ngram each set max_running_requests=48 when it is
None and log 'Max running requests is reset to 48 for speculative decoding. You can override this by
explicitly setting --max-running-requests.'; _handle_uno does not. The same rule stands at
sgl-project/sglang commit d9ccf6a78adc60d5d467cdad6dacac97b7bfedfa (same file, before DSPARK and UNO
existed) for the EAGLE family, DFLASH, FROZEN_KV_MTP and NGRAM. The scheduler then gives each
DP-attention rank max(1, n // attn_dp_size) (resolve_max_num_reqs in
srt/mem_cache/kv_cache_configurator.py).
"""

from __future__ import annotations

SPECULATIVE_MAX_RUNNING = 48
"""The max_running_requests SGLang 0.5.23 sets for a speculative launch that gives none."""

KEEPS_MAX_RUNNING = ("UNO",)
"""Speculative algorithms whose SGLang 0.5.23 hook leaves an unset max_running_requests unset."""


def speculative_sets_max_running(algorithm: object) -> bool:
    """Whether SGLang's hook for this --speculative-algorithm value (None/False: none given) sets
    max_running_requests to 48 when the launch leaves it unset."""
    if algorithm in (None, False, ""):
        return False
    return str(algorithm).upper() not in KEEPS_MAX_RUNNING


def sglang_max_running_requests(requested: int | None, *, speculative: bool) -> int | None:
    """max_running_requests as SGLang holds it after its speculative hook (all DP-attention ranks
    together): `requested` when given, 48 when `speculative` (speculative_sets_max_running), else
    None: SGLang then estimates it from the KV pool."""
    if requested is None and speculative:
        return SPECULATIVE_MAX_RUNNING
    return requested
