"""Knobs -> SGLang flags, in one table, and the facts the launch rules are evaluated on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError

from ..catalog import ArgValue, Model, Platform
from ..catalog.flags import ExtraFlag, knob_of
from .config import PlanConfig
from .rules import RuleResult
from .shell import env_ref, shell_join

__all__ = ["KNOB_FLAGS", "resolve_knobs", "server_args"]


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
    recipe = model.recipe_on(platform)
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


# --------------------------------------------------------------------------- flags read back


def speculative_in(lookup: dict[str, ArgValue | None]) -> bool:
    """Whether a server's canonical flags turn on speculative decoding."""
    return lookup.get("--speculative-algorithm") not in (None, False)
