"""Launchers whose server is a fleet behind the real sglang-router: one server per node of a plan with
`plan.router` (the replicas of a `replicas` plan, plan/fleet.py; or a PD deployment's prefill and
decode servers), then the plan's router in front of them on the run's address.

What the members are is the launcher's (emulator.py: an emulator each; sglang_cpu.py: real SGLang on
the CPU); starting them, their ports and logs, the router's command, readiness, watching and stopping
are the same for every such launcher and live here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...plan import NodeCommand
from ...rundir import RunFolder
from ...target.locate import fetch_server_info
from ...tools.envs import OFFLINE_ENV
from ..logpump import start_pumped
from ..router import Fleet, Member, router_argv, router_python, wait_fleet
from .base import LaunchContext, free_port, url_host
from .process import ProcessGroupLauncher

if TYPE_CHECKING:
    from ..handle import ServerHandle

ROUTER_DEFAULT_POLICY = "cache_aware"
"""sglang-router's --policy when none is given (0.3.2: `RouterArgs.policy`)."""

MemberCommand = Callable[[NodeCommand, int, list[str]], tuple[list[str], dict[str, str]]]
"""(node, its port here, its flags) -> the command that serves it and the env it needs."""


def server_flags_of(argv: list[str]) -> list[str]:
    """A node's SGLang flags without the entrypoint."""
    start = next((i for i, a in enumerate(argv) if a.startswith("--")), len(argv))
    return argv[start:]


def set_flag(flags: list[str], flag: str, value: str) -> list[str]:
    """`flags` with `flag`'s value replaced (appended when absent)."""
    out = list(flags)
    if flag in out:
        at = out.index(flag)
        out[at + 1 : at + 2] = [value]
        return out
    return [*out, flag, value]


def start_fleet(
    ctx: LaunchContext,
    handle: ServerHandle,
    command: MemberCommand,
    *,
    server: str,
    what: str,
    router_extra: list[str] | None = None,
) -> Fleet:
    """One server per node of the plan, each on a free port of the run's host with that node's flags
    (a prefill server's bootstrap port too), then the plan's sglang-router in front of them on the
    run's address with the plan's --policy (plus `router_extra`). The (first) decode server or replica
    0 logs to server.log (the server log the invoke and diagnose stages read), the others to
    logs/<server>-<name>.log and the router to logs/router.log. `what` names a member in errors
    ("emulated", "SGLang CPU"). The handle's process is the router; every other group is in
    extra_pgids, so teardown and the watchdog stop them all."""
    assert ctx.plan.router is not None
    python = router_python()  # before anything starts: a missing env is an error with the fix
    base_env = {**ctx.environ, "PYTHONUNBUFFERED": "1"}
    fleet = Fleet(what=what)
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
                flags = set_flag(flags, "--disaggregation-bootstrap-port", str(bootstrap))
            argv, env = command(node, port, flags)
            name = f"{node.role}-{node.node_rank}"
            serves_log = node.role in ("decode", "replica") and not decode  # the first decode server or replica
            log = handle.log_path if serves_log and handle.log_path else ctx.folder.member_log(name, server)
            url = f"http://{url_host(ctx.host)}:{port}"
            process = start_pumped(argv, {**base_env, **env}, log, handle.api_key_env)
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
        ) + list(router_extra or [])
        log = ctx.folder.logs / RunFolder.ROUTER_LOG
        router = start_pumped(argv, {**base_env, **OFFLINE_ENV}, log, handle.api_key_env)
        fleet.router = Member("router", f"http://{url_host(ctx.host)}:{ctx.port}", router, log, "router")
    except BaseException:
        fleet.stop()
        raise
    handle.command = argv
    handle.process = router
    handle.pid = handle.pgid = router.pid
    handle.extra_pgids = [m.process.pid for m in fleet.backends]
    handle.backends = [{"name": m.name, "url": m.url, "role": m.worker_type} for m in fleet.backends]
    handle.router_policy = argv[argv.index("--policy") + 1] if "--policy" in argv[:-1] else ROUTER_DEFAULT_POLICY
    return fleet


class FleetLauncher(ProcessGroupLauncher):
    """A process-group launcher that may run a fleet (set `self.fleet` in start): readiness waits for
    the router to list every member healthy, then runs the normal chain through the router; exit and
    stop cover every member."""

    fleet: Fleet | None = None

    def wait_ready(self, handle: ServerHandle, timeout: float, progress: bool) -> None:
        if self.fleet is not None:
            wait_fleet(self.fleet, timeout)
        super().wait_ready(handle, timeout, progress)
        if self.fleet is not None:
            # sglang-router 0.3.2 answers /server_info with 404 and /get_server_info with its own
            # counts (router_manager, workers_count): the serving facts (KV pool, flags) come from
            # the decode server (or the first replica) behind it
            serving = next((m for m in self.fleet.backends if m.worker_type == "decode"), self.fleet.backends[0])
            handle.server_info = fetch_server_info(serving.url, handle.api_key())
            handle.warnings.append(f"server_info read from the {serving.name} server behind the router ({serving.url})")

    def exit_code(self, handle: ServerHandle) -> int | None:
        """With a router: the first member (router, prefill, decode, replica) that has exited, or None."""
        if self.fleet is not None:
            gone = self.fleet.dead()
            return gone.exit_code() if gone is not None else None
        return super().exit_code(handle)

    def stop(self, handle: ServerHandle) -> None:
        if self.fleet is not None:
            self.fleet.stop()
        super().stop(handle)
