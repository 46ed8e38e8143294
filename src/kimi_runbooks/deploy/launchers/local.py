"""`sglang serve` on this machine, in its own process group behind the log pump."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...plan import LaunchPlan
from ..errors import DeployError
from ..preflight import PreflightReport, check_accelerators, check_model_path, check_port, check_shm
from .base import LaunchContext, register
from .process import ProcessGroupLauncher

if TYPE_CHECKING:
    from ..handle import ServerHandle


def local_command(plan: LaunchPlan, environ: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """argv (the key filled in from `environ`) and the full child env for launcher='local'.
    Only references the plan generated are filled; every user value reaches SGLang as typed.
    The plan's device pinning (shown in its command) wins over an exported *_VISIBLE_DEVICES:
    to choose the devices, plan with device_ids."""
    if plan.deployment is None and plan.router is not None:
        raise DeployError(
            f"this plan runs {len(plan.nodes)} servers behind sglang-router (replicas={plan.config.replicas}), and "
            "launcher='local' starts one server. Fix: launcher='multi-node' writes one script per replica and the "
            "router's (run them on this node), or launcher='emulator' to rehearse the fleet."
        )
    try:
        argv = plan.resolved_argv(environ)
        env = plan.resolved_env(environ)
    except KeyError as exc:
        raise DeployError(f"cannot launch: {exc.args[0]}. Fix: export it before launching.") from None
    return argv, {**environ, **env}


@register
class LocalLauncher(ProcessGroupLauncher):
    name = "local"

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        if port is not None and port != plan.serve_port:
            raise DeployError("port= differs from the plan's port. Fix: set port in the PlanConfig.")
        return plan.serve_host, plan.serve_port

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        return PreflightReport(
            [
                *check_accelerators(ctx.plan, ctx.environ),
                check_port(ctx.host, ctx.port),
                check_model_path(ctx.plan),
                check_shm(),
            ]
        )

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        argv, env = local_command(ctx.plan, ctx.environ)
        handle.command, handle.env = ctx.plan.argv, dict(ctx.plan.launch_env)
        self.start_process(handle, argv, env)
