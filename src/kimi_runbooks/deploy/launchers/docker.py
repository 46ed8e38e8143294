"""`docker run` of the platform's image (AMD's ROCm images); logs followed through the log pump.

The key never appears on a command line: `-e NAME` hands the variable to the container and the
server command runs as `sh -c 'exec sglang serve ... --api-key "$NAME"'`, expanded inside, so
neither the `docker run` process (`ps`) nor the container's Cmd/Args (docker inspect) show the
value. Limits: Config.Env holds it, as for any `-e`, and SGLang takes the key only as --api-key,
so the server process inside has it in its own argv (`docker top`).
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
from typing import TYPE_CHECKING, Any

from ...plan import LaunchPlan
from ...procs import STOP_GRACE_SECONDS
from ...rundir import RunFolder
from ..diagnose import diagnose
from ..errors import DeployError
from ..preflight import PreflightReport, check_accelerators, check_docker, check_model_path, check_port
from .base import LaunchContext, register
from .process import ProcessGroupLauncher

if TYPE_CHECKING:
    from ..handle import ServerHandle


def docker_command(plan: LaunchPlan, environ: dict[str, str]) -> tuple[list[str], str]:
    """The plan's `docker run` argv with ${HOME} filled in, and the container name."""
    if not plan.docker_argv and plan.nodes and plan.nodes[0].docker_argv:
        kind = "replicas behind sglang-router" if plan.nodes[0].role == "replica" else "nodes"
        raise DeployError(
            f"this plan has {len(plan.nodes)} servers ({kind}), "
            "one docker form each (kimi-runbooks plan prints them), and the docker launcher starts one container "
            "on this machine; Fix: use launcher='multi-node' (node scripts, or Slurm), or run each docker form "
            "where the plan says."
        )
    if not plan.docker_argv:
        raise DeployError(
            f"platform {plan.platform.id} has no docker image in params/platforms; Fix: use launcher='local'."
        )
    argv = list(plan.docker_argv)
    key_env = plan.config.api_key_env
    try:
        if key_env:
            if not environ.get(key_env):
                raise KeyError(f"environment variable {key_env} is not set")
            image = argv.index(plan.docker_image or "", argv.index("--name"))
            head, inner = argv[: image + 1], drop_flag(argv[image + 1 :], "--api-key")
            head, inner = _expand_all(plan, head, environ), _expand_all(plan, inner, environ)
            argv = head + ["sh", "-c", f'exec {shlex.join(inner)} --api-key "${key_env}"']
        else:
            argv = _expand_all(plan, argv, environ)
    except KeyError as exc:
        raise DeployError(f"cannot launch: {exc.args[0]}. Fix: export it before launching.") from None
    name = argv[argv.index("--name") + 1]
    return argv, name


def _expand_all(plan: LaunchPlan, argv: list[str], environ: dict[str, str]) -> list[str]:
    return dataclasses.replace(plan, argv=argv).resolved_argv(environ)


def drop_flag(argv: list[str], flag: str) -> list[str]:
    """argv without `flag` and its value."""
    out, i = [], 0
    while i < len(argv):
        if argv[i] == flag:
            i += 2 if i + 1 < len(argv) and not argv[i + 1].startswith("--") else 1
            continue
        out.append(argv[i])
        i += 1
    return out


def docker_rm(name: str) -> None:
    try:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        pass


@register
class DockerLauncher(ProcessGroupLauncher):
    name = "docker"

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        # no /dev/shm check: the container gets its own --shm-size
        return PreflightReport(
            [
                *check_accelerators(ctx.plan, ctx.environ),
                check_port(ctx.host, ctx.port),
                check_model_path(ctx.plan),
                *check_docker(ctx.plan.docker_image, ctx.environ),
            ]
        )

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        argv, handle.container = docker_command(ctx.plan, ctx.environ)
        handle.command = list(ctx.plan.docker_argv or [])
        proc = subprocess.run(argv, capture_output=True, text=True, env=ctx.environ, timeout=600)
        if proc.returncode:
            err = ctx.folder.redact(proc.stderr.strip())
            handle.container = None
            raise DeployError(f"docker run failed: {err[:500]}", diagnose(err, secret_env=handle.api_key_env))
        self.start_process(handle, ["docker", "logs", "-f", handle.container or ""], ctx.environ)

    def stop(self, handle: ServerHandle) -> None:
        if handle.container:
            docker_rm(handle.container)
        super().stop(handle)

    @classmethod
    def stop_recorded(cls, folder: RunFolder, record: dict[str, Any], grace: float = STOP_GRACE_SECONDS) -> list[str]:
        done = super().stop_recorded(folder, record, grace)
        if record.get("container"):
            docker_rm(str(record["container"]))
            done.append(f"docker rm -f {record['container']}")
        return done
