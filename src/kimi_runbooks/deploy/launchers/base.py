"""What every launcher does, and the registry that picks one by name.

A launcher starts a validated plan somewhere (this machine, a container, a Slurm allocation, a
rack started by hand, someone else's server) and knows how to watch and stop what it started.
`launch()` (deploy/launch.py) does the rest the same way for all of them: validation, preflight,
the teardown registry, readiness and the manifest. A new launcher is one class here with
`@register`; its own knobs are its `Options` model, so no launcher's test knobs leak into another.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from ...plan import LaunchPlan
from ...procs import STOP_GRACE_SECONDS
from ...rundir import RunFolder
from ...target import ports as net
from ..errors import DeployError
from ..preflight import PreflightReport
from ..readiness import wait_ready

if TYPE_CHECKING:
    from ..handle import ServerHandle


def url_host(host: str) -> str:
    """A host as it goes into a URL: IPv6 literals in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


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


def local_bind(plan: LaunchPlan, port: int | None) -> tuple[str, int]:
    """Where a server this machine runs (the emulator, a CPU rehearsal) listens: node addresses
    (deployments, `${NODE0_IP}`) and wildcard binds become loopback; a free port by default, so runs
    never collide."""
    host = plan.serve_host
    host = "127.0.0.1" if host in ("0.0.0.0", "::") or "${" in host or not is_local(host) else host
    return host, port or free_port(host)


class NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")


@dataclass
class LaunchContext:
    """What a launcher needs to start one plan."""

    plan: LaunchPlan
    folder: RunFolder
    environ: dict[str, str]
    host: str
    port: int
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


class Launcher:
    """Base class: start, wait_ready, stop, logs (plus where to bind and which checks to run)."""

    name: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = NoOptions
    owns_server: ClassVar[bool] = True
    emulated: ClassVar[bool] = False
    waits_by_default: ClassVar[bool] = True
    default_startup_timeout: ClassVar[float] = 1800.0
    """Seconds readiness waits when the caller gives no startup_timeout (loading ~600 GB takes long)."""

    def __init__(self, options: BaseModel | None = None) -> None:
        self.options = options if options is not None else self.Options()

    # ---- before start
    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        """The (host, port) the server will listen on."""
        return plan.serve_host, port or plan.serve_port

    def url(self, plan: LaunchPlan, host: str, port: int) -> str:
        """Where clients reach the server (a wildcard bind is reached on loopback)."""
        shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
        return f"http://{url_host(shown)}:{port}"

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        """The checks that can fail before anything starts (none by default)."""
        return PreflightReport()

    # ---- lifecycle
    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        raise NotImplementedError

    def wait_ready(self, handle: ServerHandle, timeout: float, progress: bool) -> None:
        wait_ready(handle, timeout=timeout, progress=progress)

    def ready_url_known(self, handle: ServerHandle) -> bool:
        """False when the address is only known on the nodes (multi-node scripts, a Slurm allocation)."""
        return "${" not in handle.base_url

    def stop(self, handle: ServerHandle) -> None:
        """Stop what start() started; called once, by handle.stop()."""

    def logs(self, handle: ServerHandle) -> str:
        if handle.log_path and handle.log_path.exists():
            return handle.log_path.read_text(errors="replace")
        return ""

    def exit_code(self, handle: ServerHandle) -> int | None:
        """None while the server runs (or is not ours to watch); its exit code once it has exited."""
        return handle.process.poll() if handle.process is not None else None

    @classmethod
    def stop_recorded(cls, folder: RunFolder, record: dict[str, Any], grace: float = STOP_GRACE_SECONDS) -> list[str]:
        """Stop a server a previous process left running, from its process.json record (SIGTERM, then
        SIGKILL after `grace` seconds where there is a process to signal)."""
        return []


LAUNCHERS: dict[str, type[Launcher]] = {}


def register(cls: type[Launcher]) -> type[Launcher]:
    LAUNCHERS[cls.name] = cls
    return cls


def launcher_class(name: str) -> type[Launcher]:
    try:
        return LAUNCHERS[name]
    except KeyError:
        raise DeployError(f"unknown launcher '{name}'. Fix: use one of {', '.join(LAUNCHERS)}.") from None


def get_launcher(name: str, options: Mapping[str, Any] | BaseModel | None = None) -> Launcher:
    """The launcher `name` with its options validated (unknown option names are refused)."""
    cls = launcher_class(name)
    if isinstance(options, BaseModel):
        return cls(options)
    try:
        return cls(cls.Options.model_validate(dict(options or {})))
    except ValidationError as exc:
        fields = ", ".join(cls.Options.model_fields) or "(none)"
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise DeployError(f"launcher '{name}' options: {problems}. Fix: its options are: {fields}.") from None
