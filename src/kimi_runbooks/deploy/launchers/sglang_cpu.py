"""Real SGLang on this machine's CPU, serving a tiny checkpoint of the plan's model: a rehearsal whose
server is SGLang itself (its argument parser, HTTP layer, parsers, scheduler, metrics), not a double.

The deploy stage writes the tiny checkpoint into the run folder (rehearsal/tiny_model.py), starts
`python -m sglang.launch_server` from the bench tool env (SGLang 0.5.23 as the benchmark client
installs it) with SGLang's CPU engine, the plan's flags that apply on a CPU (rehearsal/cpu_flags.py:
every other flag is recorded with its reason in rehearsal.json and the report) and a few of its
own, and watches and stops it like any local server (process group behind the log pump, teardown
registry, watchdog). Everything measured is labelled REAL SGLANG, TINY MODEL (origin.py).

A `replicas` plan (plan/fleet.py) runs as on its node: one such server per replica, all serving the
one tiny checkpoint, each with its replica's flags through the same decisions, and the plan's
sglang-router in front with its --policy (launchers/behind_router.py), so cache_aware routing meets real radix
caches. Each replica's torch gets its share of the cores (OMP_NUM_THREADS): two servers with a
2-thread OpenMP pool each on 2 cores answered the agentic trace ~5x slower (8 decode tokens a request:
95 s against 20 s, measured). A PD deployment cannot run here (refuse_pd says why).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from ...origin import REHEARSAL_LABEL
from ...plan import LaunchPlan, NodeCommand
from ...tools.envs import OFFLINE_ENV, ToolEnvError, tool_env
from ...tools.scripts import HERE as SCRIPTS_DIR
from ..errors import DeployError
from ..preflight import Check, PreflightReport, check_port
from ..rehearsal.cpu_flags import CpuFlags, OwnFlag, cpu_flags
from ..rehearsal.tiny_model import build_tiny_model
from .base import LaunchContext, local_bind, register
from .behind_router import FleetLauncher, start_fleet

if TYPE_CHECKING:
    from ..handle import ServerHandle

SITE_DIR = "sglang_cpu_site"
"""tools/scripts/<this>: the stand-in sgl_kernel and the plugin, put on the server's PYTHONPATH."""


class SglangCpuOptions(BaseModel):
    """The rehearsal's own sizes: what a CPU can hold and answer in minutes, not the plan's."""

    model_config = ConfigDict(extra="forbid")

    context_length: int = Field(default=8192, ge=512, le=131072)
    """--context-length of the CPU server (the plan's is for the real model on accelerators)."""
    max_total_tokens: int = Field(default=65536, ge=1024)
    """--max-total-tokens: the KV pool (SGLang would otherwise size it from the machine's RAM)."""


def server_env(site: str) -> dict[str, str]:
    """What SGLang's processes need to run on the CPU with the stand-in kit."""
    return {
        "SGLANG_USE_CPU_ENGINE": "1",  # selects SGLang's CPU platform; --device cpu alone does not
        "TORCHDYNAMO_DISABLE": "1",  # skips a ~30 s inductor compile of the MoE router on the first request
        "PYTHONPATH": site,
        "PYTHONUNBUFFERED": "1",
        **OFFLINE_ENV,
    }


def threads_per_server(servers: int) -> int:
    """Compute threads each of `servers` CPU servers gets: this machine's cores shared out, at least one."""
    return max(1, len(os.sched_getaffinity(0)) // max(servers, 1))


PD_REFUSED = (
    "launcher sglang-cpu cannot run a PD (prefill/decode disaggregated) deployment: SGLang hands each "
    "request's KV cache from the prefill server to the decode server through a transfer engine "
    "(--disaggregation-transfer-backend mooncake, nixl, mori or ascend, built for RDMA NICs and accelerator "
    "memory; none of them is installed in the bench env, and 'fake' serves warm-up requests only, moving nothing). "
    "Fix: rehearse this deployment with launcher='emulator' (its PD servers answer the real sglang-router as "
    "SGLang's do), or plan replicas (replicas=2) to put real CPU SGLang servers behind the router."
)


def refuse_pd(plan: LaunchPlan) -> None:
    """A PD deployment cannot run on the CPU: a DeployError naming why and the fix."""
    pd = plan.router is not None and "--pd-disaggregation" in plan.router.argv
    if pd or any(n.role in ("prefill", "decode") for n in plan.nodes):
        raise DeployError(PD_REFUSED)


@register
class SglangCpuLauncher(FleetLauncher):
    """One real SGLang CPU server; or, for a `replicas` plan (plan.router set, nodes of role "replica"),
    one per replica (the tiny checkpoint written once and shared, each server with its replica's
    flags through the same cpu_flags decisions) and the plan's sglang-router in front (fleet.py)."""

    name = "sglang-cpu"
    Options = SglangCpuOptions
    default_startup_timeout = 300.0

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        refuse_pd(plan)  # before the preflight: nothing it checks could make a PD deployment run here
        return local_bind(plan, port)

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        checks = [check_port(ctx.host, ctx.port)]
        try:
            env = tool_env("bench")
            checks.append(Check("sglang", "pass", f"SGLang {env.version} in {env.python}"))
        except ToolEnvError as exc:
            fix = "bash scripts/setup_tool_env.sh bench (SGLang 0.5.23, ~6 GB, a few minutes)"
            checks.append(Check("sglang", "fail", f"no SGLang to run on the CPU: {exc}", fix))
        return PreflightReport(checks)

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        assert isinstance(self.options, SglangCpuOptions)
        refuse_pd(ctx.plan)
        opts = self.options
        python = tool_env("bench").python
        tiny = build_tiny_model(ctx.folder, ctx.plan.model, python)  # once: every replica serves it
        plan_context = ctx.plan.config.context_length or ctx.plan.model.max_context_length
        context = min(opts.context_length, plan_context)
        env = server_env(str(SCRIPTS_DIR / SITE_DIR))

        def decide(node: NodeCommand | None, port: int) -> CpuFlags:
            ours = [
                OwnFlag("--model-path", str(tiny.directory), "the tiny checkpoint written for this run"),
                OwnFlag("--served-model-name", ctx.plan.served_name, "the plan's served model name"),
                OwnFlag("--host", ctx.host, "the rehearsal binds loopback"),
                OwnFlag("--port", str(port), "a free port"),
                OwnFlag("--device", "cpu", "SGLang's CPU engine"),
                OwnFlag("--context-length", str(context), f"a CPU-sized context (the plan's: {plan_context})"),
                OwnFlag("--max-total-tokens", str(opts.max_total_tokens), "a CPU-sized KV pool"),
                OwnFlag("--enable-metrics", None, "/metrics for the speed stage's server samples"),
                OwnFlag("--sleep-on-idle", None, "an idle CPU scheduler otherwise polls at ~90% of a core, measured"),
                OwnFlag(
                    "--enable-custom-logit-processor",
                    None,
                    "lets the invoke stage script the tiny model's output through SGLang's own parsers",
                ),
            ]
            return cpu_flags(ctx.plan, ctx.environ, ours, node)

        record: dict[str, Any] = {
            "label": REHEARSAL_LABEL,
            "tiny_model": tiny.summary(),
            "context_length": context,
            "max_total_tokens": opts.max_total_tokens,
            "env": env,
        }
        handle.tokenizer = str(tiny.directory)
        handle.rehearsal = REHEARSAL_LABEL
        if ctx.plan.router is None:
            flags = decide(None, ctx.port)
            argv = [str(python), "-m", "sglang.launch_server", *flags.passed]
            handle.command, handle.env = argv, env
            self._record(ctx, handle, record, flags)
            self.start_process(handle, argv, {**ctx.environ, **env})
            return
        members: dict[str, CpuFlags] = {}

        # each replica's torch gets its share of the cores: with every server's OpenMP pool as wide as the
        # machine, their threads wait on each other at every op's barrier
        env = {**env, "OMP_NUM_THREADS": str(threads_per_server(len(ctx.plan.nodes)))}
        record["env"] = env

        def command(node: NodeCommand, port: int, _flags: list[str]) -> tuple[list[str], dict[str, str]]:
            members[f"{node.role}-{node.node_rank}"] = decided = decide(node, port)
            return [str(python), "-m", "sglang.launch_server", *decided.passed], env

        self.fleet = start_fleet(ctx, handle, command, server="sglang", what="SGLang CPU")
        record["fleet"] = {
            "router": handle.command,
            "members": [
                {"name": m.name, "url": m.url, "log": str(m.log.relative_to(ctx.folder.path))}
                for m in self.fleet.backends
            ],
        }
        self._record(ctx, handle, record, next(iter(members.values())))

    @staticmethod
    def _record(ctx: LaunchContext, handle: ServerHandle, record: dict[str, Any], flags: CpuFlags) -> None:
        """rehearsal.json (the report's CPU rehearsal section) and a warning naming what cannot apply."""
        skipped = flags.not_applicable()
        if skipped:
            handle.warnings.append(
                f"{len(skipped)} of the plan's flags and env variables are not applicable on the CPU: "
                + "; ".join(f"{d.item} ({d.reason})" for d in skipped[:4])
                + ("; ..." if len(skipped) > 4 else "")
                + " (all in rehearsal.json)"
            )
        ctx.folder.save_json(ctx.folder.rehearsal, {**record, "flags": [d.as_row() for d in flags.dispositions]})

    def ready_url_known(self, handle: ServerHandle) -> bool:
        return True
