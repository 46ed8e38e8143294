"""Multi-node plans: one executable script per node plus the router's, and the steps to run them.

Under launcher='multi-node' the scripts are started by hand (so they are stopped by hand);
launcher='slurm' submits the same scripts in one sbatch job (slurm.py).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from ...plan import LaunchPlan
from ...rundir import RunFolder
from .base import LaunchContext, Launcher, register

if TYPE_CHECKING:
    from ..handle import ServerHandle


def write_node_scripts(plan: LaunchPlan, folder: RunFolder) -> tuple[list[Path], Path | None]:
    """One executable script per node (plan.nodes[i].script) and the router's, in `folder`."""
    paths = [
        folder.save_text(folder.node_script(node.role, node.node_rank), node.script, executable=True)
        for node in plan.nodes
    ]
    router = None
    if plan.router is not None:
        router = folder.save_text(folder.router_script, plan.router.script, executable=True)
    return paths, router


def multinode_steps(plan: LaunchPlan, scripts: list[Path], router: Path | None) -> str:
    lines = [
        f"# {len(scripts)} node script(s) for {plan.deployment.id if plan.deployment else plan.platform.id}:",
        "# export the variables the scripts name (MODEL_PATH, NODE0_IP, IFNAME, ...) or pass them in",
        "# the PlanConfig (model_path, node_ips, ifname, prefill_ip, decode_ip), then:",
    ]
    for i, (node, path) in enumerate(zip(plan.nodes, scripts), 1):
        where = (
            f"{node.role} {node.node_rank}, on this node"
            if node.role == "replica"
            else f"on {node.role} node {node.node_rank}"
        )
        lines.append(f"{i}. {where}: bash {shlex.quote(str(path))}")
    if router:
        lines.append(
            f"{len(scripts) + 1}. when the servers are up, on the router host: bash {shlex.quote(str(router))}"
        )
    lines.append(f"then the server answers at {plan.base_url}")
    return "\n".join(lines)


def prepare_scripts(ctx: LaunchContext, handle: ServerHandle) -> tuple[list[Path], Path | None, str]:
    """Write the node scripts and STEPS.txt; returns (scripts, router script, steps text)."""
    scripts, router = write_node_scripts(ctx.plan, ctx.folder)
    handle.scripts = scripts + ([router] if router else [])
    handle.command = ctx.plan.argv
    steps = multinode_steps(ctx.plan, scripts, router)
    ctx.folder.save_text(ctx.folder.steps, steps + "\n")
    return scripts, router, steps


@register
class MultiNodeLauncher(Launcher):
    """Scripts only: the user starts them on each node; readiness is awaited when the URL is known."""

    name = "multi-node"
    owns_server = False
    waits_by_default = False  # the scripts are started by hand, maybe much later

    def url(self, plan: LaunchPlan, host: str, port: int) -> str:
        return plan.base_url  # the router's (or node 0's) address, maybe only known on the nodes

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        _, _, steps = prepare_scripts(ctx, handle)
        print(steps)
        handle.log_path = None
