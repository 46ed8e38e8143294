"""SGLang's router (sglang-router, the `router` tool env) in front of replicas and PD pools.

A plan with a router (the Ascend PD deployments: ``plan.router``, a NodeCommand running
``python -m sglang_router.launch_router --pd-disaggregation --prefill URL PORT --decode URL ...``)
is rehearsed as it runs on the rack: one emulator per prefill and decode server, each answering
as SGLang's PD servers answer the router (emulator/disagg.py), and the real router in front of
them with the plan's own flags (its policy, its mode); only the addresses are this machine's.
A `replicas` plan's replicas go behind it as ``--worker-urls``: emulators, or real SGLang servers on
the CPU (launcher sglang-cpu); launchers/behind_router.py starts either. ``replica_fleet`` does the same for
N plain emulator commands, as the router's tests do.

The router polls each worker's /health, /server_info and /model_info to register it
(sglang-router 0.3.2, workflow steps detect_connection_mode ... activate_workers) and lists the
registered ones at GET /workers (``is_healthy``, ``worker_type`` regular/prefill/decode): readiness
waits until every backend is listed healthy, and stops early, naming it, when a backend or the
router itself has exited.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ..procs import kill_group
from ..rundir import RunFolder
from ..tools.envs import ToolEnvMissing, tool_env
from .errors import DeployError

WORKER_FLAGS = {"--worker-urls", "--prefill", "--decode"}
ADDRESS_FLAGS = {"--host", "--port", "--prometheus-port", "--prometheus-host"}
HOW_TO_BUILD = "make tool-envs` or `bash scripts/setup_tool_env.sh router"


@dataclass
class Member:
    """One process of the fleet: an emulator replica / pool server, or the router."""

    name: str  # "prefill-0", "decode-0", "replica-1", "router"
    url: str
    process: subprocess.Popen[bytes]
    log: Path
    worker_type: str = "regular"

    def exit_code(self) -> int | None:
        return self.process.poll()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


@dataclass
class Fleet:
    """The backends and the router started for one plan; `stop()` ends every process group."""

    backends: list[Member] = field(default_factory=list)
    router: Member | None = None
    what: str = "emulated"
    """What the backends are, as errors name them ("emulated", "SGLang CPU")."""

    @property
    def members(self) -> list[Member]:
        return [*self.backends, *([self.router] if self.router else [])]

    def pgids(self) -> list[int]:
        return [m.process.pid for m in self.members]

    def dead(self) -> Member | None:
        return next((m for m in self.members if m.exit_code() is not None), None)

    def stop(self) -> None:
        for member in reversed(self.members):
            kill_group(member.process.pid, member.process)


def router_python() -> str:
    """The router env's interpreter; a missing env is an error naming the fix."""
    try:
        return str(tool_env("router").python)
    except ToolEnvMissing as exc:
        raise DeployError(
            f"this plan runs sglang-router in front of its servers, and the router env is missing ({exc}). "
            f"Fix: `{HOW_TO_BUILD}` (installs sglang-router 0.3.2 from the package registry, about a minute)."
        ) from None


def router_argv(
    plan_argv: list[str],
    python: str,
    *,
    host: str,
    port: int,
    prometheus_port: int,
    workers: list[str] | None = None,
    prefill: list[tuple[str, int | None]] | None = None,
    decode: list[str] | None = None,
) -> list[str]:
    """The plan's router command with this machine's addresses: its entrypoint becomes the router
    env's python, its worker flags the emulators' URLs; every other flag (--policy, --pd-disaggregation,
    ...) is kept as the plan gives it."""
    start = next((i for i, a in enumerate(plan_argv) if a.startswith("--")), len(plan_argv))
    rest = plan_argv[start:]
    kept: list[str] = []
    i = 0
    while i < len(rest):
        flag = rest[i]
        j = i + 1
        while j < len(rest) and not rest[j].startswith("--"):
            j += 1
        if flag not in WORKER_FLAGS | ADDRESS_FLAGS:
            kept += rest[i:j]
        i = j
    argv = [python, "-m", "sglang_router.launch_router", *kept]
    if workers:
        argv += ["--worker-urls", *workers]
    for url, bootstrap in prefill or []:
        argv += ["--prefill", url, *([str(bootstrap)] if bootstrap is not None else [])]
    for url in decode or []:
        argv += ["--decode", url]
    argv += ["--host", host, "--port", str(port), "--prometheus-host", host, "--prometheus-port", str(prometheus_port)]
    return argv


def registered(router_url: str, timeout: float = 2.0) -> dict[str, bool]:
    """The router's workers: url -> healthy (GET /workers)."""
    answer = httpx.get(f"{router_url}/workers", timeout=timeout)
    answer.raise_for_status()
    rows = answer.json().get("workers", [])
    return {str(w.get("url")): bool(w.get("is_healthy")) for w in rows if isinstance(w, dict)}


def wait_fleet(fleet: Fleet, timeout: float, poll: float = 0.25) -> None:
    """Until the router lists every backend as healthy. A member that exits meanwhile, or a
    router that never lists them, is an error naming it and showing its log's last lines."""
    assert fleet.router is not None
    expected = {m.url for m in fleet.backends}
    deadline = time.monotonic() + timeout
    seen: dict[str, bool] = {}
    while True:
        gone = fleet.dead()
        if gone is not None:
            what = "sglang-router" if gone is fleet.router else f"{fleet.what} {gone.name} server ({gone.url})"
            raise DeployError(
                f"the {what} exited with code {gone.exit_code()} before the router was ready; "
                f"its log ({gone.log}) ends with:\n{gone.log_tail()}\n"
                "Fix: read that log; for the router, check its flags in the plan's router command."
            )
        try:
            seen = registered(fleet.router.url)
        except (httpx.HTTPError, ValueError):
            seen = {}
        if expected and all(seen.get(url) for url in expected):
            return
        if time.monotonic() >= deadline:
            missing = sorted(url for url in expected if not seen.get(url))
            raise DeployError(
                f"sglang-router at {fleet.router.url} did not list {', '.join(missing)} as healthy workers within "
                f"{timeout:g} s (it lists {seen or 'none'}); its log is {fleet.router.log}. "
                "Fix: check that each server answers /health, /server_info and /model_info."
            )
        time.sleep(poll)


@dataclass(frozen=True)
class RouterAddress:
    """Where a router listens: its requests on host:port, its Prometheus metrics on prometheus_port."""

    host: str
    port: int
    prometheus_port: int


def replica_fleet(
    emulator_argvs: list[list[str]],
    urls: list[str],
    logs_dir: Path,
    address: RouterAddress,
    *,
    policy: str,
    env: dict[str, str],
    start: Callable[[list[str], dict[str, str], Path], subprocess.Popen[bytes]],
) -> Fleet:
    """N plain replicas (one emulator argv and URL each) behind the router at `address` with
    `--policy`; `start` runs one command behind the log pump into a log file of `logs_dir`."""
    host, port = address.host, address.port
    python = router_python()
    fleet = Fleet()
    try:
        for i, (argv, url) in enumerate(zip(emulator_argvs, urls, strict=True)):
            log = logs_dir / RunFolder.MEMBER_LOG.format("emulator", f"replica-{i}")
            fleet.backends.append(Member(f"replica-{i}", url, start(argv, env, log), log))
        argv = router_argv([], python, host=host, port=port, prometheus_port=address.prometheus_port, workers=urls) + [
            "--policy",
            policy,
        ]
        log = logs_dir / RunFolder.ROUTER_LOG
        fleet.router = Member("router", f"http://{host}:{port}", start(argv, env, log), log, "router")
    except BaseException:
        fleet.stop()
        raise
    return fleet
