"""What a launch plan means for speed: one or two pools of devices and how each is split.

A plain plan is one "mixed" pool (prefill and decode on the same devices). A published
PD-disaggregated deployment (params/deployments) has a prefill pool and a decode pool, each
with its own parallelism, KV pool and limits, read from the role's SGLang flags.

Parallelism, as SGLang lays it out:
* tp: every weight matrix is split over tp devices; experts too (or placed whole with ep,
  which reads the same bytes per device on average).
* DP attention (`--enable-dp-attention --dp N`): attention runs data-parallel on N ranks of
  tp/N devices; each rank holds its own requests' KV (whole latent), MoE stays over tp.
* dp without DP attention: N independent replicas of tp devices each.
* MLA latent KV is not split by heads: every device of an attention rank reads all of its
  requests' latent KV in each decode step.
* a hybrid model's state pool (plan/state_pool.py) admits a fixed number of requests per
  attention rank: SGLang caps the running batch there.
* pp (--pp-size): pp stages of tp devices each hold layers / pp of the model (pipeline.py); with
  as many nodes as stages, each stage's tp group sits inside a node and only the stage
  boundaries cross the scale-out network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._deps import (
    LaunchPlan,
    MemoryPlan,
    Model,
    Platform,
    canonical_flag,
    plan_memory,
    resolve_knobs,
    sglang_max_running_requests,
    speculative_sets_max_running,
)
from .geometry import Geometry, geometry

SGLANG_CHUNKED_PREFILL_GIB_SPLIT = 160.0
"""SGLang's default --chunked-prefill-size is 8192 below 160 GiB of device memory and 16384
above (python/sglang/srt/arg_groups/memory_hook.py, _handle_gpu_memory_settings)."""

EAGLE3_DEFAULT = (3, 4)
"""(--speculative-num-steps, --speculative-num-draft-tokens) of recipes.EAGLE3_ARGS."""
BLOCK_DRAFT_STEPS = 1
"""DSPARK drafts a whole block per iteration: assumed one draft forward pass (unverified)."""
WEIGHT_ONLY_RUNNERS = ("marlin",)
"""--moe-runner-backend values that dequantize 4-bit experts to bf16 inside the GEMM (Marlin W4A16:
SGLang cookbook Kimi-K3, 2. Configuration Tips)."""


@dataclass(frozen=True)
class Speculative:
    num_steps: int
    draft_tokens: int


@dataclass(frozen=True)
class Pool:
    role: str  # "mixed", "prefill" or "decode"
    tp: int
    attention_ranks: int  # DP-attention ranks inside one replica (1 = plain TP attention)
    ep: int
    replicas: int  # independent copies (dp without DP attention)
    nodes: int
    kv_pool_tokens: int  # per attention rank
    max_running: int | None
    """SGLang's max_running_requests per replica, all attention ranks together: the flag, or the 48 a
    speculative launch gets without it (plan/running_limit.py)."""
    chunked_prefill: int
    speculative: Speculative | None
    geometry: Geometry
    state_requests: int | None = None
    """A hybrid model's state-pool ceiling per replica, all attention ranks (plan/state_pool.py)."""
    weight_only_experts: bool = False
    """The MoE runner computes in bf16 (W4A16) whatever the checkpoint's 4-bit format."""
    pp: int = 1
    """Pipeline stages (--pp-size), each of tp devices."""

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.replicas

    @property
    def spans_nodes(self) -> bool:
        """The tp group of one stage crosses nodes: more nodes than pipeline stages."""
        return self.nodes > self.pp

    @property
    def stage_crosses_nodes(self) -> bool:
        """Consecutive pipeline stages sit on different nodes."""
        return self.pp > 1 and self.nodes > 1

    def _kv_requests(self, tokens_per_request: int) -> int:
        """Requests whose KV fits at once in one replica, all its attention ranks."""
        return self.kv_pool_tokens // max(tokens_per_request, 1) * self.attention_ranks

    def capacity_requests(self, tokens_per_request: int) -> int:
        """Requests that run at once, all ranks and replicas (0: not even one fits)."""
        per_replica = self._kv_requests(tokens_per_request)
        if self.max_running is not None:
            per_replica = min(per_replica, self.max_running)
        if self.state_requests is not None:
            per_replica = min(per_replica, self.state_requests)
        return int(per_replica * self.replicas)

    def capacity_limit(self, tokens_per_request: int) -> str:
        """What caps running requests: "state-pool" when a hybrid model's recurrent-state pool
        admits fewer requests than anything else, "max-running-requests" when SGLang's
        max_running_requests (the flag, or 48 under speculative decoding; a total SGLang splits
        over DP-attention ranks) binds before the KV pool fills, else "kv-pool"."""
        kv = self._kv_requests(tokens_per_request)
        running = self.max_running if self.max_running is not None else kv
        if self.state_requests is not None and self.state_requests < min(kv, running):
            return "state-pool"
        if self.max_running is not None and self.max_running < kv:
            return "max-running-requests"
        return "kv-pool"


@dataclass(frozen=True)
class Serving:
    platform: Platform
    model: Model
    pools: tuple[Pool, ...]
    devices: int

    @property
    def disaggregated(self) -> bool:
        return any(p.role == "prefill" for p in self.pools)

    @property
    def prefill_pool(self) -> Pool:
        return next((p for p in self.pools if p.role == "prefill"), self.pools[0])

    @property
    def decode_pool(self) -> Pool:
        return next(p for p in self.pools if p.role in ("mixed", "decode"))


def _int(args: dict[str, Any], flag: str) -> int | None:
    value = args.get(flag)
    return int(value) if value not in (None, False, True) else None


def _flag_args(argv: list[str]) -> dict[str, Any]:
    """--flag value pairs of an argv (canonical flag names); bare flags map to True."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        if argv[i].startswith("--"):
            flag = canonical_flag(argv[i])
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[flag] = argv[i + 1]
                i += 2
                continue
            out[flag] = True
        i += 1
    return out


def _default_chunk(platform: Platform) -> int:
    return 8192 if platform.memory_gib < SGLANG_CHUNKED_PREFILL_GIB_SPLIT else 16384


def _speculative(args: dict[str, Any]) -> Speculative | None:
    if "--speculative-algorithm" not in args:
        return None
    block = _int(args, "--speculative-dspark-block-size")
    if block is not None:  # SGLang's _handle_dspark: verify window = block size + 1
        return Speculative(num_steps=BLOCK_DRAFT_STEPS, draft_tokens=block + 1)
    steps = _int(args, "--speculative-num-steps") or EAGLE3_DEFAULT[0]
    drafts = _int(args, "--speculative-num-draft-tokens") or EAGLE3_DEFAULT[1]
    return Speculative(num_steps=steps, draft_tokens=drafts)


def _pool(role: str, args: dict[str, Any], nodes: int, memory: MemoryPlan, platform: Platform, model: Model) -> Pool:
    tp = _int(args, "--tp") or 1
    dp = _int(args, "--dp") or 1
    dp_attention = bool(args.get("--enable-dp-attention"))
    ep = _int(args, "--ep") or (tp if args.get("--moe-a2a-backend") else 1)
    kv_dtype = memory.kv_cache_dtype
    ranks = dp if dp_attention else 1
    state = memory.state_pool
    ssm_dtype = state.ssm_dtype if state is not None else "float32"
    return Pool(
        role=role,
        tp=tp,
        attention_ranks=dp if dp_attention else 1,
        ep=ep,
        replicas=dp if (dp > 1 and not dp_attention) else 1,
        nodes=nodes,
        kv_pool_tokens=memory.kv_pool_tokens,
        max_running=sglang_max_running_requests(
            _int(args, "--max-running-requests"),
            speculative=speculative_sets_max_running(args.get("--speculative-algorithm")),
        ),
        chunked_prefill=_int(args, "--chunked-prefill-size") or _default_chunk(platform),
        speculative=_speculative(args),
        geometry=geometry(model, kv_dtype, ssm_dtype),
        # SGLang caps running requests by the state pool (resolve_max_num_reqs), per DP-attention rank
        state_requests=state.state_requests * ranks if state is not None else None,
        weight_only_experts=str(args.get("--moe-runner-backend")) in WEIGHT_ONLY_RUNNERS,
        pp=_int(args, "--pp") or 1,
    )


def serving_from_plan(plan: LaunchPlan) -> Serving:
    """The pools a plan runs: one mixed pool, or the deployment's prefill and decode roles."""
    platform, model = plan.platform, plan.model
    if plan.deployment is None:
        knobs = resolve_knobs(plan.config, platform, model)
        args = _flag_args(plan.argv)
        args.update(
            {
                "--tp": knobs.tp,
                "--dp": knobs.dp,
                "--ep": knobs.ep,
                "--pp": knobs.pp,
                "--enable-dp-attention": knobs.enable_dp_attention,
            }
        )
        pool = _pool("mixed", args, knobs.nnodes, plan.memory, platform, model)
        return Serving(platform, model, (pool,), plan.devices_used)
    pools = []
    for role in plan.deployment.roles:
        node = next(n for n in plan.nodes if n.role == role.name)
        args = _flag_args(node.argv)
        memory = plan.memory if role.name in ("mixed", "decode") else _role_memory(args, platform, model)
        pools.append(_pool(role.name, args, role.nodes, memory, platform, model))
    # the roles' own tp x replicas, not nodes x the platform's devices_per_node: a platform's node
    # size can change (params/platforms) while the published role commands keep their tp
    return Serving(platform, model, tuple(pools), sum(p.devices for p in pools))


def _role_memory(args: dict[str, Any], platform: Platform, model: Model) -> MemoryPlan:
    kv = args.get("--kv-cache-dtype")
    dp = _int(args, "--dp") or 1
    return plan_memory(
        platform,
        model,
        tp=_int(args, "--tp") or 1,
        pp=_int(args, "--pp") or 1,
        mem_fraction_static=float(args.get("--mem-fraction-static", platform.default_mem_fraction_static)),
        kv_cache_dtype=str(kv) if kv and kv != "auto" else model.default_kv_cache_dtype,
        dp_attention_ranks=dp if args.get("--enable-dp-attention") else 1,
        speculative="--speculative-algorithm" in args,
    )
