"""The planner's last step (cell -> knobs -> args -> rules -> **LaunchPlan**): the checked server's
commands. The argv and env, the command as one shell string, a `docker run` form for one node,
per-node commands (each with its own docker form) for a multi-node plan; every value quoted
literally (shell.py)."""

from __future__ import annotations

import shlex
from collections.abc import Callable

from ..catalog import Model, Platform
from .args import Args, arg_lookup
from .config import PlanConfig
from .cookbook import CellChoice, node_env
from .knobs import ResolvedKnobs, pinned_devices, speculative_in
from .launch_plan import LaunchPlan, NodeCommand
from .server_rules import PlannedServer
from .shell import Ref, Word, args_to_argv, env_ref, join_word, render_script, shell_command


def build_launch_plan(
    config: PlanConfig,
    platform: Platform,
    model: Model,
    knobs: ResolvedKnobs,
    choice: CellChoice,
    args: Args,
    leading: list[str],
    checked: PlannedServer,
) -> LaunchPlan:
    """The LaunchPlan of one server: `args` (then the user's words before their first flag) after
    the entrypoint, in the cell's or the knobs' environment (and the draft model's, when speculative
    decoding is on), pinned to the devices the knobs name."""
    env = dict(knobs.env)
    if choice.cell is not None:
        env = {**choice.cell.env, **config.env}
    if speculative_in(arg_lookup(args)) and model.draft_model is not None:
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
    return LaunchPlan(
        config=config,
        platform=platform,
        model=model,
        deployment=None,
        argv=argv,
        env=env,
        docker_argv=docker_argv,
        nodes=nodes,
        router=None,
        memory=checked.memory,
        serve_host=config.host,
        serve_port=config.port,
        results=checked.results,
        device_env=device_env,
        version_changes=checked.version_changes,
        cookbook=choice.explanation,
    )


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
