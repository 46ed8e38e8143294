"""The project's SGLang emulator as the server: CI, laptops and rehearsals (everything EMULATED)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ...plan import LaunchPlan
from ...rundir import RunFolder
from ...target import ports as net
from ...target.locate import fetch_server_info
from ...tools.envs import OFFLINE_ENV
from ..errors import DeployError
from ..logpump import start_pumped
from ..preflight import PreflightReport, check_port
from ..router import Fleet, Member, router_argv, router_python, wait_fleet
from .base import LaunchContext, register, url_host
from .process import ProcessGroupLauncher

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


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` now; IPv6 loopback (::1) is bound with an IPv6 socket."""
    try:
        return net.free_port(host)
    except OSError as exc:
        raise DeployError(
            f"cannot bind {host} to find a free port ({exc}). "
            "Fix: use host 127.0.0.1 (::1 needs IPv6 enabled on this machine)."
        ) from None


def is_local(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


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
class EmulatorLauncher(ProcessGroupLauncher):
    name = "emulator"
    Options = EmulatorOptions
    emulated = True
    fleet: Fleet | None = None

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        # The emulator always runs on this machine: node addresses (deployments, `${NODE0_IP}`)
        # and wildcard binds become loopback; a free port by default, so runs never collide.
        host = plan.serve_host
        host = "127.0.0.1" if host in ("0.0.0.0", "::") or "${" in host or not is_local(host) else host
        return host, port or free_port(host)

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

    def wait_ready(self, handle: ServerHandle, timeout: float, progress: bool) -> None:
        if self.fleet is not None:
            wait_fleet(self.fleet, timeout)
        super().wait_ready(handle, timeout, progress)
        if self.fleet is not None:
            # sglang-router 0.3.2 answers /server_info with 404 and /get_server_info with its own
            # counts (router_manager, workers_count): the serving facts (KV pool, flags) come from
            # the decode server behind it
            serving = next((m for m in self.fleet.backends if m.worker_type == "decode"), self.fleet.backends[0])
            handle.server_info = fetch_server_info(serving.url, handle.api_key())
            handle.warnings.append(f"server_info read from the {serving.name} server behind the router ({serving.url})")

    def exit_code(self, handle: ServerHandle) -> int | None:
        """With a router: the first member (router, prefill, decode) that has exited, or None."""
        if self.fleet is not None:
            gone = self.fleet.dead()
            return gone.exit_code() if gone is not None else None
        return super().exit_code(handle)

    def stop(self, handle: ServerHandle) -> None:
        if self.fleet is not None:
            self.fleet.stop()
        super().stop(handle)


def _set_flag(flags: list[str], flag: str, value: str) -> list[str]:
    """`flags` with `flag`'s value replaced (appended when absent)."""
    out = list(flags)
    if flag in out:
        at = out.index(flag)
        out[at + 1 : at + 2] = [value]
        return out
    return [*out, flag, value]


def start_pd_fleet(ctx: LaunchContext, handle: ServerHandle, options: EmulatorOptions) -> Fleet:
    """One emulator per node of the plan (its prefill and decode servers, each with that node's
    flags: --disaggregation-mode, the prefill's bootstrap port on a free port here; or the replicas
    of a `replicas` plan, plan/fleet.py, as --worker-urls), then the plan's sglang-router in front of
    them on the run's address with the plan's --policy. The (first) decode server or replica 0 logs
    to server.log (the server log the invoke and diagnose stages read), the others and the router
    under logs/."""
    assert ctx.plan.router is not None
    python = router_python()  # before anything starts: a missing env is an error with the fix
    env = {**ctx.environ, "PYTHONUNBUFFERED": "1"}
    fleet = Fleet()
    ctx.folder.logs.mkdir(parents=True, exist_ok=True)
    prefill: list[tuple[str, int | None]] = []
    decode: list[str] = []
    try:
        for node in ctx.plan.nodes:
            flags = server_flags_of(node.argv)
            port = free_port(ctx.host)
            bootstrap = None
            if node.role == "prefill":
                bootstrap = free_port(ctx.host)
                flags = _set_flag(flags, "--disaggregation-bootstrap-port", str(bootstrap))
            argv = emulator_argv(ctx.plan, host=ctx.host, port=port, options=options, flags=flags)
            name = f"{node.role}-{node.node_rank}"
            serves_log = node.role in ("decode", "replica") and not decode  # the first decode server or replica
            log = handle.log_path if serves_log and handle.log_path else ctx.folder.member_log(name)
            url = f"http://{url_host(ctx.host)}:{port}"
            process = start_pumped(argv, env, log, handle.api_key_env)
            fleet.backends.append(Member(name, url, process, log, node.role))
            if node.role == "prefill":
                prefill.append((url, bootstrap))
            else:
                decode.append(url)
        pd = "--pd-disaggregation" in ctx.plan.router.argv
        argv = router_argv(
            ctx.plan.router.argv,
            python,
            host=ctx.host,
            port=ctx.port,
            prometheus_port=free_port(ctx.host),
            workers=None if pd else [*(u for u, _ in prefill), *decode],
            prefill=prefill if pd else None,
            decode=decode if pd else None,
        )
        log = ctx.folder.logs / RunFolder.ROUTER_LOG
        router = start_pumped(argv, {**env, **OFFLINE_ENV}, log, handle.api_key_env)
        fleet.router = Member("router", f"http://{url_host(ctx.host)}:{ctx.port}", router, log, "router")
    except BaseException:
        fleet.stop()
        raise
    handle.command = argv
    handle.process = router
    handle.pid = handle.pgid = router.pid
    handle.extra_pgids = [m.process.pid for m in fleet.backends]
    return fleet


def server_flags_of(argv: list[str]) -> list[str]:
    start = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    return argv[start:]
