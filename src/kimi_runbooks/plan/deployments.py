"""Published multi-role deployments (params/deployments/, e.g. Ascend A3 PD-disaggregated):
per-role, per-node commands with their placeholders filled, and the router."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import TypeVar

from ..catalog import ArgValue, Catalog, Deployment, ParamsError, Platform, Role
from ..catalog.flags import ExtraFlag, canonical_flag, merge_args, parse_extra_args
from .config import PlanConfig
from .knobs import (
    METRICS_FLAG,
    ServerShape,
    apply_knob_flags,
)
from .launch_plan import LaunchPlan, NodeCommand
from .rules import RuleResult
from .server_options import read_extra_options
from .server_rules import PlannedServer, plan_server, unknown_allows
from .shell import args_to_argv, env_ref, join_word, render_script, shell_command

_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def _fill(value: ArgValue, values: dict[str, str]) -> ArgValue:
    """Placeholders replaced by their values; a generated reference keeps the result a Word."""
    if isinstance(value, list):
        return [_fill(v, values) for v in value]  # type: ignore[misc]
    if isinstance(value, str):
        pieces: list[str] = []
        end = 0
        for match in _PLACEHOLDER.finditer(value):
            pieces += [value[end : match.start()], values.get(match.group(1), match.group(0))]
            end = match.end()
        pieces.append(value[end:])
        return join_word(*pieces)
    return value


def _placeholder_values(config: PlanConfig, role: Role | None, rank: int) -> dict[str, str]:
    ips = config.node_ips
    values = {
        "model_path": config.model_path or env_ref("MODEL_PATH", "MODEL_PATH to the weights directory"),
        "draft_model_path": config.draft_model_path
        or env_ref("DRAFT_MODEL_PATH", "DRAFT_MODEL_PATH to the draft weights directory"),
        "ifname": config.ifname or env_ref("IFNAME", "IFNAME to the HCCL/Gloo network interface"),
        "prefill_ip": config.prefill_ip or env_ref("PREFILL_IP", "PREFILL_IP to the prefill node address"),
        "decode_ip": config.decode_ip or env_ref("DECODE_IP", "DECODE_IP to the decode node address"),
        "master_ip": ips[0] if ips else env_ref("NODE0_IP", "NODE0_IP to the address of node 0"),
        "node_ip": ips[rank]
        if rank < len(ips)
        else env_ref(f"NODE{rank}_IP", f"NODE{rank}_IP to the address of node {rank}"),
        "node_rank": str(rank),
        "nnodes": str(role.nodes if role else 1),
    }
    return values


def _role_args(config: PlanConfig, role: Role, rank: int, extra: list[ExtraFlag]) -> list[tuple[str, ArgValue | None]]:
    """The role's flags for node `rank`: placeholders filled, knobs set, extra flags folded in."""
    values = _placeholder_values(config, role, rank)
    overrides = _knob_overrides(config)
    args: list[tuple[str, ArgValue | None]] = []
    seen = set()
    for flag, value in role.args.items():
        canon = canonical_flag(flag)
        seen.add(canon)
        args.append((flag, overrides.get(canon, _fill(value, values))))
    for canon, value in overrides.items():
        if canon not in seen:
            args.append((canon, value))
    return merge_args(args, extra)


def _knob_overrides(config: PlanConfig) -> dict[str, ArgValue]:
    """Knobs a user set explicitly replace the deployment's value for that flag."""
    mapping = {
        "--tp": config.tp,
        "--dp": config.dp,
        "--ep": config.ep,
        "--mem-fraction-static": config.mem_fraction_static,
        "--context-length": config.context_length,
        "--kv-cache-dtype": config.kv_cache_dtype,
    }
    overrides: dict[str, ArgValue] = {flag: value for flag, value in mapping.items() if value is not None}
    if config.enable_metrics:
        overrides[METRICS_FLAG] = True  # the speed stage samples /metrics while it measures
    return overrides


N = TypeVar("N", int, float)


def _number(flag: str, value: ArgValue | None, kind: type[N]) -> N:
    """A deployment flag's value as a number (knob values arrive validated by PlanConfig, so
    anything else comes from params/deployments and is a params error)."""
    if isinstance(value, (list, bool)) or value is None:
        raise ParamsError(f"deployment flag {flag} value {value!r} is not a single number")
    return kind(value)


def _env_value(value: ArgValue) -> str:
    return value if isinstance(value, str) else str(value)


def _args_lookup(args: list[tuple[str, ArgValue | None]]) -> dict[str, ArgValue | None]:
    return {canonical_flag(f): v for f, v in args}


@dataclass(frozen=True)
class RoleShape(ServerShape):
    """A deployment role's server layout read from its flags, as the planner's ResolvedKnobs is for
    a single server."""

    mem_fraction_static: float

    @classmethod
    def of(cls, lookup: dict[str, ArgValue | None], platform: Platform, nnodes: int) -> RoleShape:
        """From a role's canonical flags; a flag the role leaves out takes SGLang's default."""
        kv = lookup.get("--kv-cache-dtype")
        mem = lookup.get("--mem-fraction-static", platform.default_mem_fraction_static)
        return cls(
            tp=_number("--tp", lookup.get("--tp", 1), int),
            dp=_number("--dp", lookup["--dp"], int) if "--dp" in lookup else None,
            ep=_number("--ep", lookup["--ep"], int) if "--ep" in lookup else None,
            enable_dp_attention=lookup.get("--enable-dp-attention", False) not in (None, False),
            kv_cache_dtype=str(kv) if kv and kv != "auto" else None,
            mem_fraction_static=_number("--mem-fraction-static", mem, float),
            context_length=_number("--context-length", lookup["--context-length"], int)
            if "--context-length" in lookup
            else None,
            nnodes=nnodes,
            pp=None,
            devices_per_node=None,
        )


def plan_deployment(config: PlanConfig, catalog: Catalog, platform: Platform, deployment: Deployment) -> LaunchPlan:
    model = catalog.model(config.model or deployment.model)
    leading, extra = parse_extra_args(config.extra_args)
    config, extra, refused = apply_knob_flags(config, extra)
    extra, unread = read_extra_options(extra)
    results: list[RuleResult] = [*refused, *unread]
    nodes: list[NodeCommand] = []
    serving: PlannedServer | None = None
    serve_host = "127.0.0.1"
    for role in deployment.roles:
        role_env = {**deployment.env, **role.env, **config.env}
        lookup = _args_lookup(_role_args(config, role, 0, extra))
        shape = RoleShape.of(lookup, platform, role.nodes)
        checked = plan_server(
            config,
            catalog,
            platform,
            model,
            shape,
            lookup,
            mem_fraction_static=shape.mem_fraction_static,
            kv_cache_dtype=shape.kv_cache_dtype or model.default_kv_cache_dtype,
            role=role.name,
            host="127.0.0.1",  # deployments bind node addresses, checked by their own docs
        )
        if role.name in ("mixed", "decode"):
            serving = checked
        results.extend(checked.results)
        for rank in range(role.nodes):
            values = _placeholder_values(config, role, rank)
            args = _role_args(config, role, rank, extra)
            argv = shlex.split(role.entrypoint) + args_to_argv(args) + leading
            env = {k: _env_value(_fill(v, values)) for k, v in role_env.items()}
            command = shell_command(argv, env)
            script = render_script(deployment.host_setup, deployment.unset_env, deployment.source_scripts, env, argv)
            nodes.append(NodeCommand(role.name, rank, argv, env, command, script))
    results.extend(unknown_allows(config, catalog))
    results.sort(key=lambda r: r.severity != "error")

    router = None
    if deployment.router:
        values = _placeholder_values(config, None, 0)
        rargs: list[tuple[str, ArgValue | None]] = [(f, _fill(v, values)) for f, v in deployment.router.args.items()]
        rargv = shlex.split(deployment.router.entrypoint) + args_to_argv(rargs)
        rcommand = shell_command(rargv)
        router = NodeCommand("router", 0, rargv, {}, rcommand, render_script([], [], [], {}, rargv))
        serve_host = str(_args_lookup(rargs).get("--host", "127.0.0.1"))
    else:
        serve_host = str(_args_lookup(_role_args(config, deployment.roles[0], 0, extra)).get("--host", "127.0.0.1"))

    assert serving is not None, f"deployment {deployment.id} has no mixed or decode role"
    first = nodes[0]
    return LaunchPlan(
        config=config,
        platform=platform,
        model=model,
        deployment=deployment,
        argv=first.argv,
        env=first.env,
        docker_argv=None,
        nodes=nodes,
        router=router,
        memory=serving.memory,
        serve_host=serve_host,
        serve_port=deployment.serve_port,
        results=results,
        version_changes=serving.version_changes,
    )
