"""The project's SGLang emulator as the server: CI, laptops and rehearsals (everything EMULATED)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ...plan import LaunchPlan, NodeCommand
from ..preflight import PreflightReport, check_port
from ..router import Fleet
from .base import LaunchContext, local_bind, register
from .behind_router import FleetLauncher, start_fleet

if TYPE_CHECKING:
    from ..handle import ServerHandle


class EmulatorOptions(BaseModel):
    """Knobs of the emulator only: a rehearsal's speed and the faults tests inject."""

    model_config = ConfigDict(extra="forbid")

    time_scale: float = Field(default=1.0, gt=0, le=1000)
    """Multiplies every simulated duration (0.05 runs the latency model 20x faster)."""
    startup_seconds: float = Field(default=0.0, ge=0)
    fault: str | None = None
    """An emulator fault mode (crash-on-start, slow-start=S, crash-mid-stream, bad-tool-json, ...)."""


def server_flags(plan: LaunchPlan) -> list[str]:
    """The plan's SGLang flags without the entrypoint."""
    argv = plan.argv
    start = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    return argv[start:]


def emulator_argv(
    plan: LaunchPlan,
    *,
    host: str,
    port: int,
    options: EmulatorOptions | None = None,
    python: str = sys.executable,
    flags: list[str] | None = None,
) -> list[str]:
    """`python -m kimi_runbooks.emulator` with the platform's profile and the plan's SGLang flags
    (reported back in /server_info), or `flags` (one node's: a PD prefill or decode server).
    The key is never put on the command line: --api-key-env."""
    opts = options or EmulatorOptions()
    rename = {"--tp": "--tp-size", "--dp": "--dp-size", "--ep": "--ep-size"}  # as /server_info names them
    skip_with_value = {"--api-key", "--host", "--port", "--model-path", "--served-model-name", "--model"}
    args: list[str] = []
    rest = server_flags(plan) if flags is None else flags
    i = 0
    while i < len(rest):
        flag = rest[i]
        has_value = i + 1 < len(rest) and not rest[i + 1].startswith("--")
        if flag in skip_with_value:
            i += 2 if has_value else 1
            continue
        args.append(rename.get(flag, flag))
        i += 1
        while i < len(rest) and not rest[i].startswith("--"):
            args.append(rest[i])
            i += 1
    argv = [
        python,
        "-m",
        "kimi_runbooks.emulator",
        "--host",
        host,
        "--port",
        str(port),
        "--profile",
        plan.platform.id,
        "--model",
        plan.served_name,
        "--model-path",
        plan.config.model_path or plan.model.hf_id,
        "--time-scale",
        f"{opts.time_scale:g}",
        "--startup-seconds",
        f"{opts.startup_seconds:g}",
    ]
    if plan.memory.kv_pool_tokens > 0:
        # the emulated KV pool is the planner's estimate, so capacity skips follow the plan
        argv += ["--max-total-num-tokens", str(plan.memory.kv_pool_tokens)]
    state = plan.memory.state_pool
    if state is not None and state.slots > 0:
        # a hybrid model's state pool, the planner's too: the emulator caps running requests by it as
        # SGLang does (emulator/state_cap.py); a --max-mamba-cache-size in the plan's flags comes later and wins
        argv += ["--max-mamba-cache-size", str(state.slots)]
    if opts.fault:
        argv += ["--fault", opts.fault]
    if plan.config.api_key_env:
        argv += ["--api-key-env", plan.config.api_key_env]
    return argv + args


@register
class EmulatorLauncher(FleetLauncher):
    name = "emulator"
    Options = EmulatorOptions
    emulated = True

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        return local_bind(plan, port)

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        return PreflightReport([check_port(ctx.host, ctx.port)])

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        assert isinstance(self.options, EmulatorOptions)
        handle.time_scale = self.options.time_scale
        if ctx.plan.router is not None:  # PD pools (or replicas) behind the real sglang-router
            self.fleet = start_pd_fleet(ctx, handle, self.options)
            return
        argv = emulator_argv(ctx.plan, host=ctx.host, port=ctx.port, options=self.options)
        handle.command = argv
        self.start_process(handle, argv, {**ctx.environ, "PYTHONUNBUFFERED": "1"})


def start_pd_fleet(ctx: LaunchContext, handle: ServerHandle, options: EmulatorOptions) -> Fleet:
    """One emulator per node of the plan (its prefill and decode servers, each with that node's
    flags: --disaggregation-mode, the prefill's bootstrap port on a free port here; or the replicas
    of a `replicas` plan, plan/fleet.py, as --worker-urls), then the plan's sglang-router in front of
    them on the run's address with the plan's --policy (fleet.start_fleet: ports, logs, teardown)."""

    def command(node: NodeCommand, port: int, flags: list[str]) -> tuple[list[str], dict[str, str]]:
        return emulator_argv(ctx.plan, host=ctx.host, port=port, options=options, flags=flags), {}

    return start_fleet(ctx, handle, command, server="emulator", what="emulated")
