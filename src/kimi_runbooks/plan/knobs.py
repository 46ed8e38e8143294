"""Knobs -> SGLang flags, in one table, and the facts the launch rules are evaluated on."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from .catalog import ArgValue, Catalog, Model, Platform
from .config import PlanConfig
from .flags import FLAG_ALIASES, ExtraFlag, canonical_flag, knob_of
from .memory import MemoryPlan, plan_memory
from .rules import RuleResult
from .shell import env_ref, shell_join
from .state_pool import state_settings

__all__ = ["FLAG_ALIASES", "KNOB_FLAGS", "canonical_flag", "resolve_knobs", "rule_facts", "server_args"]


KNOB_FLAGS: list[tuple[str, str]] = [
    ("model_path", "--model-path"),
    ("served_model_name", "--served-model-name"),
    ("tp", "--tp"),
    ("dp", "--dp"),
    ("enable_dp_attention", "--enable-dp-attention"),
    ("ep", "--ep"),
    ("pp", "--pp-size"),
    ("quantization", "--quantization"),
    ("kv_cache_dtype", "--kv-cache-dtype"),
    ("mem_fraction_static", "--mem-fraction-static"),
    ("context_length", "--context-length"),
    ("reasoning_parser", "--reasoning-parser"),
    ("tool_call_parser", "--tool-call-parser"),
]
"""The one place a knob becomes a flag: knob name -> SGLang flag, in command order."""

EAGLE3_ARGS: list[tuple[str, ArgValue]] = [
    ("--speculative-algorithm", "EAGLE3"),
    ("--speculative-num-steps", 3),
    ("--speculative-eagle-topk", 1),
    ("--speculative-num-draft-tokens", 4),
]
"""EAGLE3 settings from the SGLang cookbook Kimi-K2.6 page, 4.2.5 Speculative Decoding (draft path: the model's)."""


@dataclass(frozen=True)
class ServerShape:
    """What the launch rules read of one server's layout (rule_facts): the plan's ResolvedKnobs, or
    a deployment role's flags (deployments.RoleShape), so both planners hand rule_facts one thing."""

    tp: int
    dp: int | None
    ep: int | None
    pp: int | None
    enable_dp_attention: bool
    kv_cache_dtype: str | None
    context_length: int | None
    nnodes: int
    devices_per_node: int | None
    """Accelerators per node the user has; None: the platform's."""

    @property
    def replicas(self) -> int:
        """Whole server replicas `--dp` starts (without DP attention each dp rank is a full tp group)."""
        return self.dp if (self.dp and self.dp > 1 and not self.enable_dp_attention) else 1


@dataclass(frozen=True)
class ResolvedKnobs(ServerShape):
    model_path: str
    served_model_name: str | None
    quantization: str | None
    effective_kv_cache_dtype: str
    mem_fraction_static: float | None
    effective_mem_fraction_static: float
    reasoning_parser: str | None
    tool_call_parser: str | None
    env: dict[str, str]
    devices_per_node: int
    """Accelerators per node the user has (config.devices, else the platform's)."""

    @property
    def devices_used(self) -> int:
        return self.tp * (self.pp or 1) * self.replicas


VISIBLE_DEVICES_ENV = {
    "nvidia": "CUDA_VISIBLE_DEVICES",
    "amd": "HIP_VISIBLE_DEVICES",
    "huawei": "ASCEND_RT_VISIBLE_DEVICES",
}
"""The variable that pins a process to some accelerators, per vendor (CUDA, ROCm HIP, Ascend CANN)."""


def _tp_choices(heads: int, devices: int, accepts: Callable[[int], bool]) -> str:
    """The tp values up to the plan's devices whose heads per GPU a kernel accepts, as a fix names
    them ("1, 2 or 4"): the model's head count decides, not the Kimi-K2 family's 64."""
    tps = [str(tp) for tp in range(1, max(devices, 1) + 1) if heads % tp == 0 and accepts(heads // tp)]
    return ", ".join(tps[:-1]) + f" or {tps[-1]}" if len(tps) > 1 else (tps[0] if tps else "none")


def pinned_devices(config: PlanConfig, platform: Platform, knobs: ResolvedKnobs) -> dict[str, str]:
    """`{VAR: "0,1,2,3"}` when the plan uses only some of a node's accelerators (or the user named
    them), so the server takes exactly those; empty when it uses the whole node or the user set VAR."""
    var = VISIBLE_DEVICES_ENV[platform.vendor]
    if var in knobs.env:
        return {}
    per_node = -(-knobs.devices_used // max(knobs.nnodes, 1))
    if config.device_ids:
        ids = config.device_ids
    elif per_node < knobs.devices_per_node:
        ids = list(range(per_node))
    else:
        return {}
    return {var: ",".join(str(i) for i in ids)}


def _parser(value: str | None, default: str | None) -> str | None:
    if value == "default":
        return default
    if value in (None, "", "none"):
        return None
    return value


T = TypeVar("T")


def pick(mine: T | None, theirs: T) -> T:
    """The user's value when set, else the recipe's."""
    return mine if mine is not None else theirs


def resolve_knobs(config: PlanConfig, platform: Platform, model: Model) -> ResolvedKnobs:
    recipe = platform.recipe
    same_model = recipe.model == model.id
    kv = pick(config.kv_cache_dtype, recipe.kv_cache_dtype)
    mem = pick(config.mem_fraction_static, recipe.mem_fraction_static)
    return ResolvedKnobs(
        model_path=config.model_path or model.hf_id,
        served_model_name=config.served_model_name,
        tp=pick(config.tp, recipe.tp),
        dp=pick(config.dp, recipe.dp),
        ep=pick(config.ep, recipe.ep),
        pp=config.pp,
        enable_dp_attention=pick(config.enable_dp_attention, recipe.enable_dp_attention),
        quantization=pick(config.quantization, model.quantization_flag),
        kv_cache_dtype=kv,
        effective_kv_cache_dtype=kv if kv not in (None, "auto") else model.default_kv_cache_dtype,
        mem_fraction_static=mem,
        effective_mem_fraction_static=mem if mem is not None else platform.default_mem_fraction_static,
        context_length=pick(config.context_length, recipe.context_length if same_model else None),
        reasoning_parser=_parser(config.reasoning_parser, model.default_reasoning_parser),
        tool_call_parser=_parser(config.tool_call_parser, model.tool_call_parser),
        env={**recipe.env, **config.env},
        nnodes=config.nnodes or platform.nodes,
        devices_per_node=config.devices or platform.devices_per_node,
    )


METRICS_FLAG = "--enable-metrics"


AMD_EAGLE3_FLAG = "--disable-custom-all-reduce"
"""EAGLE on AMD must run with --disable-custom-all-reduce: the aiter custom all-reduce kernel
(aiter::cross_device_reduce_2stage) deadlocks in the EAGLE target-verify step at high concurrency
(sgl-project/sglang PR 29313, GLM-5.1 cookbook; the fallback is RCCL)."""


def server_args(
    config: PlanConfig, knobs: ResolvedKnobs, model: Model, vendor: str = "nvidia"
) -> list[tuple[str, ArgValue | None]]:
    values = {
        "model_path": knobs.model_path,
        "served_model_name": knobs.served_model_name,
        "tp": knobs.tp,
        "dp": knobs.dp,
        "enable_dp_attention": knobs.enable_dp_attention,
        "ep": knobs.ep,
        "pp": knobs.pp,
        "quantization": knobs.quantization,
        "kv_cache_dtype": knobs.kv_cache_dtype,
        "mem_fraction_static": knobs.mem_fraction_static,
        "context_length": knobs.context_length,
        "reasoning_parser": knobs.reasoning_parser,
        "tool_call_parser": knobs.tool_call_parser,
    }
    args: list[tuple[str, ArgValue | None]] = [(flag, values[knob]) for knob, flag in KNOB_FLAGS]
    if config.speculative:
        args.extend(EAGLE3_ARGS)
        draft = config.draft_model_path or (model.draft_model.path if model.draft_model else None)
        args.append(("--speculative-draft-model-path", draft))
        if vendor == "amd":
            args.append((AMD_EAGLE3_FLAG, True))
    args.append(("--trust-remote-code", config.trust_remote_code))
    if config.enable_metrics:  # an --extra-arg of the same flag is merged in place of this one
        args.append((METRICS_FLAG, True))
    if config.api_key_env:
        args.append(("--api-key", env_ref(config.api_key_env)))
    args.extend([("--host", config.host), ("--port", config.port)])
    return args


# --------------------------------------------------------------------------- knobs given as extra args

EXTRA_ARG_SOURCE = (
    "SGLang reads --flag=value and --flag value alike and keeps the last occurrence "
    "(argparse in python/sglang/srt/server_args.py prepare_server_args)"
)


def apply_knob_flags(
    config: PlanConfig, extra: list[ExtraFlag]
) -> tuple[PlanConfig, list[ExtraFlag], list[RuleResult]]:
    """Split the extra flags into knob-owned ones and the rest. Each knob-owned flag is refused
    (an error naming the knob to use) and its value applied, so the rules judge what SGLang would
    run; returns (effective config, the other flags, the errors)."""
    rest: list[ExtraFlag] = []
    results: list[RuleResult] = []
    updates: dict[str, Any] = {}
    base = config.model_dump()
    for item in extra:
        owner = knob_of(item.flag)
        if owner is None:
            rest.append(item)
            continue
        canon, knob = owner
        value: Any = True if knob.switch else item.value
        problem = None
        if knob.applied:
            try:
                PlanConfig.model_validate({**base, knob.knob: value})
            except ValidationError as exc:
                problem = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        # never echo a key, a per-node value, or a value its knob refuses (it may hold anything)
        shown = None if knob.switch or not knob.applied or problem else value
        results.append(_knob_refusal(item, canon, knob.knob, knob.cli, shown))
        if problem is not None:
            said, _, fix = problem.partition(". Fix: ")
            results.append(_rule("extra-arg-value", f"--extra-arg {canon} ...: {said}", fix or "fix the value"))
            continue
        if not knob.applied:
            continue
        updates[knob.knob] = value
    effective = PlanConfig.model_validate({**base, **updates}) if updates else config
    return effective, rest, results


def _knob_refusal(item: ExtraFlag, flag: str, knob: str, cli: str | None, value: Any) -> RuleResult:
    shown = "" if value is None else " " + (shell_join(value) if isinstance(value, list) else shell_join([str(value)]))
    use = f"{cli}{shown} (knob {knob})" if cli else f"the knob {knob}"
    written = item.written if value is not None or not item.values else item.flag + " ..."
    return _rule(
        "extra-arg-is-knob",
        f"--extra-arg {written} sets {flag}, which the plan owns through the knob {knob}",
        f"use {use}, not --extra-arg {written}" + (f" (runbook: -p {knob}{shown})" if value is not None else ""),
    )


def _rule(rule_id: str, message: str, fix: str) -> RuleResult:
    return RuleResult(id=rule_id, severity="error", kind="rule", message=message, fix=fix, source=EXTRA_ARG_SOURCE)


# --------------------------------------------------------------------------- facts for rules

_IMAGE_TAG_VERSION = re.compile(r":v?(\d+\.\d+\.\d+(?:(?:rc|\.post|\.dev)\d+)?)")


def image_version(image: str | None) -> str:
    """The SGLang version in a docker image tag (lmsysorg/sglang:v0.5.9-rocm700-mi35x -> 0.5.9), or ""."""
    match = _IMAGE_TAG_VERSION.search(image or "")
    return match.group(1) if match else ""


def speculative_in(lookup: dict[str, ArgValue | None]) -> bool:
    """Whether a server's canonical flags turn on speculative decoding."""
    return lookup.get("--speculative-algorithm") not in (None, False)


def server_memory(
    platform: Platform,
    model: Model,
    shape: ServerShape,
    lookup: dict[str, ArgValue | None],
    *,
    mem_fraction_static: float,
    kv_cache_dtype: str,
) -> MemoryPlan:
    """One server's memory plan from its layout and canonical flags: the same arithmetic whether the
    layout is the plan's knobs or a deployment role's flags (pipeline stages, DP-attention pools,
    replicas, a hybrid model's state pool, the context length)."""
    return plan_memory(
        platform,
        model,
        tp=shape.tp,
        pp=shape.pp or 1,
        mem_fraction_static=mem_fraction_static,
        kv_cache_dtype=kv_cache_dtype,
        dp_attention_ranks=(shape.dp or 1) if shape.enable_dp_attention else 1,
        speculative=speculative_in(lookup),
        replicas=shape.replicas,
        state=state_settings(lookup) if model.architecture.hybrid else None,
        context_length=shape.context_length,
    )


def rule_facts(
    config: PlanConfig,
    platform: Platform,
    model: Model,
    shape: ServerShape,
    memory: MemoryPlan,
    *,
    mem_fraction_static: float,
    speculative: bool,
    cookbook: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The facts params/rules are evaluated on: the platform's, the model's and this server's
    (``shape``, with its memory plan)."""
    tp, dp, ep, pp, nnodes = shape.tp, shape.dp, shape.ep, shape.pp, shape.nnodes
    enable_dp_attention, kv_cache_dtype = shape.enable_dp_attention, shape.kv_cache_dtype
    heads = model.architecture.num_attention_heads
    per_node = shape.devices_per_node or platform.devices_per_node
    devices = per_node * nnodes
    dp_replicas = shape.replicas
    needed = tp * (pp or 1) * dp_replicas
    return {
        "platform": platform.id,
        "platform_name": platform.name,
        "vendor": platform.vendor,
        "arch": platform.arch,
        "fp8": platform.fp8,
        "fp4_formats": tuple(platform.fp4_formats),
        "devices": devices,
        "devices_per_node": per_node,
        "idle_devices": max(devices - needed, 0),
        "needed_per_node": -(-needed // max(nnodes, 1)),
        "device_ids_count": len(config.device_ids),
        "max_device_id": max(config.device_ids, default=-1),
        "nnodes": nnodes,
        "memory_gib": platform.memory_gib,
        "runtime_reserve_gib": platform.runtime_reserve_gib,
        "model": model.id,
        "model_vendors": tuple(model.vendors),
        "weight_format": model.weight_format,
        "weight_only_runner": model.weight_only_runner or "",
        "num_attention_heads": heads,
        "heads_per_rank": heads / tp if heads % tp else heads // tp,
        "aiter_tps": _tp_choices(heads, devices, lambda per: per % 16 == 0),
        "aiter_padded_tps": _tp_choices(heads, devices, lambda per: per in (4, 8) or (per % 16 == 0 and per <= 128)),
        "max_context_length": model.max_context_length,
        "has_draft_model": model.draft_model is not None or bool(config.draft_model_path),
        "published": model.id in platform.published_models,
        "published_models": tuple(platform.published_models),
        "tp": tp,
        "dp": dp or 1,
        "ep": ep or 1,
        "pp": pp or 1,
        "tp_pp": tp * (pp or 1),
        "dp_replicas": dp_replicas,
        "needed_devices": needed,
        "enable_dp_attention": enable_dp_attention,
        "kv_cache_dtype": kv_cache_dtype or "auto",
        "mem_fraction_static": mem_fraction_static,
        "context_length": shape.context_length or model.max_context_length,
        "speculative": speculative,
        "host": config.host,
        "api_key_env": config.api_key_env or "",
        "sglang_version": config.sglang_version,
        "docker_image": config.docker_image or platform.docker_image or "",
        "image_version": image_version(config.docker_image or platform.docker_image),
        "weights_gib_per_device": round(memory.weights_gib_per_device, 1),
        "usable_gib_per_device": round(memory.usable_gib_per_device, 1),
        "kv_budget_gib": memory.kv_budget_gib,
        "kv_pool_tokens": memory.kv_pool_tokens,
        "hybrid": memory.state_pool is not None,
        "state_pool_requests": memory.state_pool.state_requests if memory.state_pool else 0,
        "state_pool_slots": memory.state_pool.slots if memory.state_pool else 0,
        "state_slots_per_request": memory.state_pool.slots_per_request if memory.state_pool else 0,
        "state_pool_caps_batch": bool(memory.state_pool and memory.state_pool.capped_by_state),
        "max_running_requests": memory.state_pool.max_running_requests if memory.state_pool else 0,
        **(cookbook or NO_COOKBOOK_FACTS),
    }


NO_COOKBOOK_FACTS: dict[str, Any] = {
    "has_cookbook": False,
    "cookbook_status": "",
    "cookbook_cell": "",
    "cookbook_explanation": "",
    "cookbook_verified_cells": "(none)",
    "cookbook_source": "",
    "strategy": "",
}
"""The cookbook facts of a model without cookbook cells (plan.cookbook.CellChoice.facts fills them)."""


# --------------------------------------------------------------------------- the plan


def unknown_allows(config: PlanConfig, catalog: Catalog) -> list[RuleResult]:
    known = {r.id for r in catalog.rules}
    return [
        RuleResult(
            id="unknown-allow",
            severity="error",
            kind="rule",
            message=f"--allow {rule_id} names no rule",
            fix="use one of: " + ", ".join(sorted(known)),
            source="params/rules",
        )
        for rule_id in config.allow
        if rule_id not in known
    ]
