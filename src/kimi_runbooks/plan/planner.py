"""Turn a run configuration into a validated launch plan.

`plan(config)` resolves the platform's default recipe (params/platforms/<id>.yaml), the model
(params/models/<id>.yaml) and the knobs the user set, maps every knob to its SGLang flag in one
table (`knobs.KNOB_FLAGS`), checks every rule in params/rules/ and returns a `LaunchPlan`: the
argv and env, the command as one shell string, a `docker run` form, per-node commands for
multi-node platforms and, for published multi-role deployments (params/deployments/), the
prefill, decode and router commands (`deployments`). `extra_args` are folded in as SGLang reads
them (flags.py: the last occurrence wins; a knob's flag is refused with the knob to use, and its
value is what the rules judge). Every value is quoted literally (shell.py). All rule failures are
collected; nothing raises for a bad configuration, so callers can print every problem at once.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from ..catalog import Catalog, Model, Platform, load_catalog
from ..catalog.flags import canonical_flag, merge_args, parse_extra_args
from .config import PlanConfig
from .cookbook import cell_args, cell_config, cell_flag_warnings, choose_cell, node_env
from .deployments import plan_deployment
from .fleet import ROUTER_SOURCE, plan_fleet
from .knobs import (
    ResolvedKnobs,
    apply_knob_flags,
    pinned_devices,
    resolve_knobs,
    server_args,
    speculative_in,
)
from .launch_plan import Alternative, LaunchPlan, NodeCommand
from .rules import RuleResult
from .server_options import read_extra_options
from .server_rules import plan_server, unknown_allows
from .shell import Ref, Word, args_to_argv, env_ref, join_word, render_script, shell_command


def plan(config: PlanConfig | dict[str, Any], catalog: Catalog | None = None) -> LaunchPlan:
    """Validate `config` against params/ and build every command; see the module docstring.

    Unknown platform, model or deployment ids raise `UnknownIdError` (listing the valid ids),
    since no plan can be built without them; every other problem lands in `plan.errors`.
    """
    catalog = catalog or load_catalog()
    if isinstance(config, dict):
        config = PlanConfig.model_validate(config)
    platform = catalog.platform(config.platform)
    deployment_id = config.deployment
    if deployment_id is None and config.model in (None, platform.recipe.model):
        deployment_id = platform.recipe.deployment
    if deployment_id:
        launch = plan_deployment(config, catalog, platform, catalog.deployment(deployment_id))
        if (config.replicas or 1) > 1:
            launch.results.insert(0, _replicas_of_deployment(config, deployment_id))
        return launch
    model = catalog.model(config.model or platform.recipe.model)
    return _plan_any(config, catalog, platform, model)


def _plan_any(config: PlanConfig, catalog: Catalog, platform: Platform, model: Model) -> LaunchPlan:
    """One server, or N of them behind sglang-router when `config.replicas` > 1 (fleet.py)."""
    if (config.replicas or 1) > 1:
        return plan_fleet(config, platform, lambda one: _plan_single(one, catalog, platform, model, alternatives=False))
    return _plan_single(config, catalog, platform, model)


def _replicas_of_deployment(config: PlanConfig, deployment_id: str) -> RuleResult:
    return RuleResult(
        id="replicas-deployment",
        severity="error",
        kind="rule",
        message=f"replicas={config.replicas} applies to one-server plans; deployment {deployment_id} has its own roles",
        fix="drop replicas (the deployment's router command fronts its roles), or plan a model without a deployment",
        source=ROUTER_SOURCE,
    )


def _plan_single(
    config: PlanConfig, catalog: Catalog, platform: Platform, model: Model, *, alternatives: bool = True
) -> LaunchPlan:
    leading, extra = parse_extra_args(config.extra_args)
    config, extra, refused = apply_knob_flags(config, extra)
    extra, unread = read_extra_options(extra)
    refused += unread
    choice = choose_cell(model, platform, config)
    user_config = config
    if choice.cell is not None:
        config = cell_config(config, choice.cell, model)
    _, recipe_extra = parse_extra_args(platform.recipe.extra_args if platform.recipe.model == model.id else [])
    knobs = resolve_knobs(config, platform, model)
    if choice.cell is not None:
        args = merge_args(cell_args(choice.cell, user_config, knobs.model_path), extra)
    else:
        args = merge_args(server_args(config, knobs, model, platform.vendor), [*recipe_extra, *extra])
    lookup = {canonical_flag(f): v for f, v in args}
    speculative = speculative_in(lookup)
    checked = plan_server(
        config,
        catalog,
        platform,
        model,
        knobs,
        lookup,
        mem_fraction_static=knobs.effective_mem_fraction_static,
        kv_cache_dtype=knobs.effective_kv_cache_dtype,
        cookbook=choice.facts(),
    )
    memory = checked.memory
    results: list[RuleResult] = [*refused, *checked.results]
    results.extend(unknown_allows(config, catalog))
    if choice.cell is not None:
        results.extend(cell_flag_warnings(choice.cell, choice.source))
    results.sort(key=lambda r: r.severity != "error")

    env = dict(knobs.env)
    if choice.cell is not None:
        env = {**choice.cell.env, **config.env}
    if speculative and model.draft_model is not None:
        env = {**model.draft_model.env, **env}
    device_env = pinned_devices(config, platform, knobs)
    launch_env = {**env, **device_env}
    server_argv = args_to_argv(args) + leading
    argv = shlex.split(config.entrypoint) + server_argv
    nodes: list[NodeCommand] = []
    docker_argv = None  # a multi-node plan has one docker form per node, each with that node's argv
    if knobs.nnodes > 1:
        nodes = _multi_node_commands(
            config, platform, knobs, argv, launch_env, lambda rank: node_env(choice.cell, config, rank)
        )
    else:
        docker_argv = _docker_argv(config, platform, launch_env, server_argv)
    launch = LaunchPlan(
        config=config,
        platform=platform,
        model=model,
        deployment=None,
        argv=argv,
        env=env,
        docker_argv=docker_argv,
        nodes=nodes,
        router=None,
        memory=memory,
        serve_host=config.host,
        serve_port=config.port,
        results=results,
        device_env=device_env,
        version_changes=checked.version_changes,
        cookbook=choice.explanation,
    )
    if alternatives and checked.facts["idle_devices"] > 0 and knobs.nnodes == 1:
        launch.alternatives = _alternatives(config, catalog, platform, model, knobs)
    return launch


def _alternatives(
    config: PlanConfig, catalog: Catalog, platform: Platform, model: Model, knobs: ResolvedKnobs
) -> list[Alternative]:
    """Ways to use the whole node when the plan leaves devices idle: whole replicas behind SGLang's
    data-parallel router (`--dp N`), and one larger tp group where the rules at this version allow it."""
    found: list[Alternative] = []
    group = knobs.tp * (knobs.pp or 1)
    devices = knobs.devices_per_node
    base = config.model_dump(exclude={"device_ids"})
    if knobs.replicas == 1 and not knobs.enable_dp_attention and devices // group >= 2:
        replicas = devices // group
        found.append(
            _alternative(
                f"{replicas} replicas of tp {group} (--dp {replicas})",
                f"SGLang's data-parallel router (--dp {replicas} without --enable-dp-attention) starts {replicas} "
                f"copies of the tp {group} server and spreads requests over them: about {replicas}x the throughput "
                "and KV pool, the same latency per request",
                {**base, "dp": replicas, "enable_dp_attention": None},
                catalog,
                platform,
                model,
            )
        )
        found.append(
            _alternative(
                f"{replicas} replicas of tp {group} behind sglang-router (cache-aware)",
                f"{replicas} separate tp {group} servers, each on its own devices and port, behind SGLang's router "
                "(sglang-router, --policy cache_aware): it sends a request to the replica whose radix cache holds "
                "its longest prefix, so agentic, multi-turn and shared-prefix traffic keeps its cache hits; "
                "a replica can restart alone",
                {**base, "replicas": replicas, "router_policy": "cache_aware"},
                catalog,
                platform,
                model,
            )
        )
    if (knobs.pp or 1) == 1 and knobs.replicas == 1 and devices > knobs.tp:
        alt = _alternative(
            f"tp {devices} (one server on all {devices} devices)",
            f"one tp {devices} group: the weights spread over {devices} devices, leaving more memory per device "
            "for the KV pool and lower latency per token",
            {**base, "tp": devices},
            catalog,
            platform,
            model,
        )
        found.append(alt)
    return found


def _alternative(
    title: str, why: str, fields: dict[str, Any], catalog: Catalog, platform: Platform, model: Model
) -> Alternative:
    config = PlanConfig.model_validate(fields)
    if (config.replicas or 1) > 1:
        alt_plan = _plan_any(config, catalog, platform, model)
    else:
        alt_plan = _plan_single(config, catalog, platform, model, alternatives=False)
    refused = [e.id for e in alt_plan.errors]
    return Alternative(title, why, alt_plan if not refused else None, refused)


def _multi_node_commands(
    config: PlanConfig,
    platform: Platform,
    knobs: ResolvedKnobs,
    argv: list[str],
    env: dict[str, str],
    per_node_env: Callable[[int], dict[str, str]] | None = None,
) -> list[NodeCommand]:
    master = config.node_ips[0] if config.node_ips else env_ref("NODE0_IP", "NODE0_IP to the address of node 0")
    commands = []
    for rank in range(knobs.nnodes):
        node_argv = argv + [
            "--nnodes",
            str(knobs.nnodes),
            "--node-rank",
            str(rank),
            "--dist-init-addr",
            join_word(master, f":{config.dist_init_port}"),
        ]
        node_env = {**env, **(per_node_env(rank) if per_node_env else {})}
        command = shell_command(node_argv, node_env)
        script = render_script([], [], [], node_env, node_argv)
        server_argv = node_argv[len(shlex.split(config.entrypoint)) :]
        docker = _docker_argv(config, platform, node_env, server_argv, rank=rank)
        commands.append(
            NodeCommand(
                "server",
                rank,
                node_argv,
                node_env,
                command,
                script,
                docker_argv=docker,
                docker=shell_command(docker) if docker else None,
            )
        )
    return commands


HF_CACHE_MOUNT = Word(Ref("HOME"), "/.cache/huggingface:/root/.cache/huggingface")


def _docker_argv(
    config: PlanConfig, platform: Platform, env: dict[str, str], server_argv: list[str], rank: int | None = None
) -> list[str] | None:
    """`docker run` of the platform's image. One node: the container binds 0.0.0.0, published on the
    host's `host`. Node `rank` of a multi-node plan: the container shares the host's network
    (`--network host`: the ranks reach each other at --dist-init-addr and over NCCL/RCCL on the host's
    interfaces, which published ports cannot carry), so its argv is that node's, unchanged."""
    image = config.docker_image or platform.docker_image
    if not image:
        return None
    name = f"kimi-runbooks-{platform.id}-{config.port}" + ("" if rank is None else f"-node{rank}")
    argv = ["docker", "run", "--rm", "-d", "--name", name]
    if platform.vendor == "amd":
        argv += [
            "--device=/dev/kfd",
            "--device=/dev/dri",
            "--group-add",
            "video",
            "--security-opt",
            "seccomp=unconfined",
            "--cap-add=SYS_PTRACE",
        ]
    else:
        argv += ["--gpus", "all"]
    argv += ["--ipc=host", "--shm-size", "32g"]
    if rank is not None:
        argv += ["--network", "host"]
    else:
        bind = f"[{config.host}]" if ":" in config.host else config.host  # docker's IPv6 form: [::1]:port:port
        argv += ["-p", f"{bind}:{config.port}:{config.port}"]
    argv += ["-v", HF_CACHE_MOUNT]
    for key, value in env.items():
        argv += ["-e", join_word(f"{key}=", value)]
    if config.api_key_env:
        argv += ["-e", config.api_key_env]
    inner = list(server_argv)
    if rank is None:
        inner[inner.index("--host") + 1] = "0.0.0.0"
    return argv + [image] + shlex.split(config.entrypoint) + inner


# --------------------------------------------------------------------------- deployments
