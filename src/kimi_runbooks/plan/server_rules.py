"""What the launch rules read of one server and what they say: the facts (rule_facts), the
verdicts, the memory plan they were judged on and the rules that read differently at another
SGLang version. One path for the plan's single server and for every deployment role."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from packaging.version import Version

from ..catalog import ArgValue, Catalog, Model, Platform, Rule
from .args import Args, arg_lookup
from .config import DEFAULT_SGLANG_VERSION, PlanConfig
from .cookbook import CellChoice, cell_flag_warnings
from .image_release import image_release_note, image_version
from .knobs import ResolvedKnobs, ServerShape, speculative_in
from .memory import MemoryPlan, plan_memory
from .rules import RuleExpressionError, RuleResult, VersionChange, check_rules, evaluate, rule_applies
from .state_pool import state_settings


def _tp_choices(heads: int, devices: int, accepts: Callable[[int], bool]) -> str:
    """The tp values up to the plan's devices whose heads per GPU a kernel accepts, as a fix names
    them ("1, 2 or 4"): the model's head count decides, not the Kimi-K2 family's 64."""
    tps = [str(tp) for tp in range(1, max(devices, 1) + 1) if heads % tp == 0 and accepts(heads // tp)]
    return ", ".join(tps[:-1]) + f" or {tps[-1]}" if len(tps) > 1 else (tps[0] if tps else "none")


def decode_attention_backend(lookup: dict[str, ArgValue | None]) -> str:
    """The attention backend decode runs on: --decode-attention-backend, else --attention-backend
    (SGLang 0.5.23 server_args: the decode one overrides), "" when neither is given."""
    for flag in ("--decode-attention-backend", "--attention-backend"):
        value = _text(lookup.get(flag))
        if value:
            return value
    return ""


TOKENSPEED_SETS_FP8_KV = Version("0.5.23rc0")
"""From this SGLang on, --attention-backend tokenspeed_mla sets --kv-cache-dtype fp8_e4m3 itself
(params/rules/launch.yaml tokenspeed-mla-sets-fp8-kv; earlier releases refuse another dtype)."""


def served_kv_cache_dtype(kv_cache_dtype: str, attention_backend: str, sglang_version: str) -> str:
    """The KV dtype the server keeps: the command's, or FP8 where SGLang sets it for the backend."""
    if attention_backend == "tokenspeed_mla" and Version(sglang_version) >= TOKENSPEED_SETS_FP8_KV:
        return "fp8_e4m3"
    return kv_cache_dtype


def _text(value: ArgValue | None) -> str | None:
    return None if value in (None, False, True) else str(value)


def _positive_int(value: ArgValue | None) -> int:
    """A count flag's value (--dcp-size); 1 when unset or not a positive integer (SGLang refuses those)."""
    text = _text(value)
    return int(text) if text and text.isdigit() and int(text) > 0 else 1


@dataclass(frozen=True)
class PlannedServer:
    """One server checked: its memory plan, the facts the rules saw, what they said and which
    version-ranged rules read differently than at the default SGLang version."""

    memory: MemoryPlan
    facts: dict[str, Any]
    results: list[RuleResult]
    version_changes: list[VersionChange]


def plan_server(
    config: PlanConfig,
    catalog: Catalog,
    platform: Platform,
    model: Model,
    shape: ServerShape,
    lookup: dict[str, ArgValue | None],
    *,
    mem_fraction_static: float,
    kv_cache_dtype: str,
    cookbook: dict[str, Any] | None = None,
    role: str | None = None,
    host: str | None = None,
) -> PlannedServer:
    """The memory plan and rule checks of one server, whether the plan's single server or a
    deployment role (`role`; `host` overrides the address the rules see: deployments bind node
    addresses their own docs check). The memory is the same arithmetic for both layouts (pipeline
    stages, DP-attention pools, replicas, a hybrid model's state pool, the context length)."""
    speculative = speculative_in(lookup)
    backend = decode_attention_backend(lookup)
    memory = plan_memory(
        platform,
        model,
        tp=shape.tp,
        pp=shape.pp or 1,
        mem_fraction_static=mem_fraction_static,
        kv_cache_dtype=served_kv_cache_dtype(kv_cache_dtype, backend, config.sglang_version),
        dp_attention_ranks=(shape.dp or 1) if shape.enable_dp_attention else 1,
        speculative=speculative,
        replicas=shape.replicas,
        state=state_settings(lookup) if model.architecture.hybrid else None,
        context_length=shape.context_length,
        draft_path=_text(lookup.get("--speculative-draft-model-path")),
        dcp=_positive_int(lookup.get("--dcp-size")),
    )
    facts = rule_facts(
        config,
        platform,
        model,
        shape,
        memory,
        mem_fraction_static=mem_fraction_static,
        speculative=speculative,
        cookbook=cookbook,
        attention_backend=backend,
    )
    facts["speculative_algorithm"] = (_text(lookup.get("--speculative-algorithm")) or "").upper() if speculative else ""
    if host is not None:
        facts["host"] = host
    results = check_rules(catalog.rules, facts, set(config.allow), role=role)
    return PlannedServer(memory, facts, results, version_changes(catalog.rules, facts))


def check_server(
    config: PlanConfig,
    catalog: Catalog,
    platform: Platform,
    model: Model,
    knobs: ResolvedKnobs,
    args: Args,
    choice: CellChoice,
    refused: list[RuleResult],
) -> PlannedServer:
    """The planner's rules step (cell -> knobs -> args -> **rules** -> LaunchPlan) for the plan's
    single server: its memory plan and every rule, with the extra arguments refused, `allow` ids no
    rule has and the cookbook cell's warnings; errors first."""
    checked = plan_server(
        config,
        catalog,
        platform,
        model,
        knobs,
        arg_lookup(args),
        mem_fraction_static=knobs.effective_mem_fraction_static,
        kv_cache_dtype=knobs.effective_kv_cache_dtype,
        cookbook=choice.facts(),
    )
    results: list[RuleResult] = [*refused, *checked.results]
    results.extend(unknown_allows(config, catalog))
    if choice.cell is not None:
        results.extend(cell_flag_warnings(choice.cell, choice.source))
    results.sort(key=lambda r: r.severity != "error")
    return replace(checked, results=results)


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
    attention_backend: str = "",
) -> dict[str, Any]:
    """The facts params/rules are evaluated on: the platform's, the model's and this server's
    (``shape``, with its memory plan; ``attention_backend``: the one decode runs on, "" when the
    command leaves it to SGLang's default)."""
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
        "decode_attention_backend": attention_backend,
        "decode_attention_backend_shown": (
            f"attention backend {attention_backend}"
            if attention_backend
            else "the ROCm default with SGLANG_USE_AITER=1"
        ),
        "max_context_length": model.max_context_length,
        "has_draft_model": model.draft_model is not None or bool(config.draft_model_path),
        # a cookbook cell is a published recipe too (verified or not: cookbook-cell-unverified says which)
        "published": model.id in platform.published_models
        or (cookbook or {}).get("cookbook_status") in ("verified", "unverified"),
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
        "speculative_algorithm": "",  # plan_server fills it from the command (EAGLE3, DSPARK, ...)
        "host": config.host,
        "api_key_env": config.api_key_env or "",
        "sglang_version": config.sglang_version,
        "docker_image": config.docker_image or platform.docker_image or "",
        "image_version": image_version(config.docker_image or platform.docker_image),
        "image_release_note": image_release_note(config.docker_image or platform.docker_image),
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


def version_changes(rules: list[Rule], facts: dict[str, Any]) -> list[VersionChange]:
    """Rules with a version range that apply (or fire) differently at the plan's SGLang version
    than at the default one, for this plan's platform and model."""
    if facts["sglang_version"] == DEFAULT_SGLANG_VERSION:
        return []
    at_default = {**facts, "sglang_version": DEFAULT_SGLANG_VERSION}
    changes = []
    for rule in rules:
        if not rule.applies.sglang:
            continue
        try:
            before, now = rule_applies(rule, at_default), rule_applies(rule, facts)
            fires = bool(evaluate(rule.violation, facts))
        except (RuleExpressionError, TypeError, ValueError, ArithmeticError, LookupError, AttributeError):
            continue  # check_rules reports a broken rule
        if before != now:
            changes.append(
                VersionChange(
                    rule.id, rule.applies.sglang, DEFAULT_SGLANG_VERSION, before, now, before and fires, now and fires
                )
            )
    return changes
