"""N separate servers behind sglang-router (`PlanConfig.replicas`): the replica plan.

Where `--dp N` (without DP attention) has SGLang's own data-parallel controller start N copies of a
tp group inside one server, a replicas plan starts N independent servers, each the one-server plan
on its own slice of the node's devices (CUDA/HIP/ASCEND_RT_VISIBLE_DEVICES) and its own port
(`port+1` ... `port+N`), and SGLang's router (the `sglang-router` package) in front of them on
`port` with `--worker-urls` and `--policy` (cache_aware by default: the router keeps a prefix tree
per worker and sends a request to the worker whose cache holds its longest prefix, so an agent's
growing session stays on one replica's radix cache; round_robin, random, power_of_two as the
router's --help lists them, sglang-router 0.3.2).

The plan's `nodes` are the replicas (role "replica", one per index), `router` the router command;
`argv`/`env` are replica 0's (the server flags every replica shares); `command` starts all of them
from one shell. Only one node is supported: a replica per node of a multi-node plan is not built.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..catalog import Platform
from .config import PlanConfig
from .knobs import VISIBLE_DEVICES_ENV
from .launch_plan import LaunchPlan, NodeCommand
from .memory import MemoryPlan
from .rules import RuleResult
from .shell import render_script, shell_command

ROUTER_SOURCE = "https://github.com/sgl-project/sglang/blob/main/sgl-router/README.md"
"""sglang-router's README (the SGLang Model Gateway): --worker-urls, --policy, cache-aware routing."""
DEFAULT_POLICY = "cache_aware"
ROUTER_ENTRYPOINT = ["python3", "-m", "sglang_router.launch_router"]


def _error(rule_id: str, message: str, fix: str) -> RuleResult:
    return RuleResult(id=rule_id, severity="error", kind="rule", message=message, fix=fix, source=ROUTER_SOURCE)


def url_of(host: str, port: int) -> str:
    """The address the router reaches a replica at: loopback for a wildcard bind, [::1] form for IPv6."""
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def router_command(config: PlanConfig, urls: list[str]) -> NodeCommand:
    """`python3 -m sglang_router.launch_router --worker-urls ... --policy P --host H --port PORT`."""
    argv = [
        *ROUTER_ENTRYPOINT,
        "--worker-urls",
        *urls,
        "--policy",
        config.router_policy or DEFAULT_POLICY,
        "--host",
        config.host,
        "--port",
        str(config.port),
    ]
    return NodeCommand("router", 0, argv, {}, shell_command(argv), render_script([], [], [], {}, argv))


def fleet_problems(config: PlanConfig, platform: Platform, group: int) -> list[RuleResult]:
    """What makes N replicas of a `group`-device server impossible here, each with its fix."""
    n = config.replicas or 1
    found = []
    nnodes = config.nnodes or platform.nodes
    if nnodes > 1:
        found.append(
            _error(
                "replicas-multi-node",
                f"replicas={n} on a {nnodes}-node plan is not supported yet: a replicas plan puts every replica "
                "and the router on one node",
                "plan one node (nnodes 1) whose devices hold all replicas, or run one plan per node and point "
                "a router's --worker-urls at them by hand",
            )
        )
    devices = config.devices or platform.devices_per_node
    need = n * group
    if config.device_ids and len(config.device_ids) != need:
        found.append(
            _error(
                "replicas-device-ids",
                f"replicas={n} of a {group}-device server need {need} device_ids, {len(config.device_ids)} given",
                f"list exactly {need} device indices (replica i takes the i-th run of {group}), or leave "
                "device_ids unset for the first ones",
            )
        )
    elif need > devices or any(i >= devices for i in config.device_ids):
        found.append(
            _error(
                "replicas-devices",
                f"replicas={n} x {group} devices per replica need {need} devices; the node has {devices}",
                f"use replicas {max(devices // group, 1)} or a smaller tp (replicas x tp x pp x dp <= {devices})",
            )
        )
    var = VISIBLE_DEVICES_ENV[platform.vendor]
    if var in config.env:
        found.append(
            _error(
                "replicas-visible-devices",
                f"env sets {var}, but a replicas plan pins each replica to its own slice of devices",
                f"drop {var} from env and pass device_ids to choose the devices",
            )
        )
    if config.api_key_env:
        found.append(
            _error(
                "replicas-api-key",
                "api_key_env with replicas is not supported yet (the router would need the key of every replica)",
                "leave api_key_env unset for a replicas plan, or serve one server (replicas 1)",
            )
        )
    if config.port + n > 65535:
        found.append(
            _error("replicas-ports", f"replicas use ports {config.port + 1}..{config.port + n}", "choose a lower port")
        )
    return found


def plan_fleet(config: PlanConfig, platform: Platform, plan_one: Callable[[PlanConfig], LaunchPlan]) -> LaunchPlan:
    """The replicas plan of `config` (replicas > 1); `plan_one` plans one server (planner._plan_single)."""
    n = config.replicas or 1
    one = config.model_copy(update={"replicas": None, "router_policy": None, "device_ids": []})
    probe = plan_one(one)
    group = probe.devices_used
    problems = fleet_problems(config, platform, group)
    ids = config.device_ids or list(range(n * group))
    replicas: list[LaunchPlan] = []
    for i in range(n):
        chosen = ids[i * group : (i + 1) * group] if len(ids) >= (i + 1) * group else []
        update = {"port": config.port + 1 + i, "device_ids": chosen}
        replicas.append(plan_one(one.model_copy(update=update)) if not problems else probe)
    nodes = [
        NodeCommand(
            "replica",
            i,
            p.argv,
            p.launch_env,
            p.command,
            render_script([], [], [], p.launch_env, p.argv),
            docker_argv=p.docker_argv,  # its own container name, published port and device pinning
            docker=p.docker,
        )
        for i, p in enumerate(replicas)
    ]
    router = router_command(config, [url_of(config.host, config.port + 1 + i) for i in range(n)])
    first = replicas[0]
    var = VISIBLE_DEVICES_ENV[platform.vendor]
    used = ",".join(str(i) for i in ids[: n * group])
    # each replica alone leaves the others' devices idle; the fleet is judged on what it uses together
    devices = config.devices or platform.devices_per_node
    kept = [r for r in first.results if not (r.id == "devices-idle" and n * group >= devices)]
    results = sorted([*problems, *kept], key=lambda r: r.severity != "error")
    return LaunchPlan(
        config=config,
        platform=platform,
        model=first.model,
        deployment=None,
        argv=first.argv,
        env=first.env,
        docker_argv=None,  # no single docker form: each replica has its own (nodes[i].docker)
        nodes=nodes if not problems else [],
        router=router if not problems else None,
        memory=_fleet_memory(first.memory, n),
        serve_host=config.host,
        serve_port=config.port,
        results=results,
        device_env={var: used} if not problems else {},
        version_changes=first.version_changes,
        cookbook=first.cookbook,
    )


def _fleet_memory(one: MemoryPlan, n: int) -> MemoryPlan:
    """One replica's memory per device, with the fleet's N independent pools (as `--dp N` counts them)."""
    note = f"{n} replicas behind sglang-router: each its own server, checkpoint copy and KV pool"
    return dataclasses.replace(
        one,
        replicas=one.replicas * n,  # kv_pool_tokens_total follows: pool x ranks x replicas
        notes=[*one.notes, note],
    )
