"""A launched (or attached) server: where it is, what runs it, and how to stop it."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..plan import LaunchPlan
from ..procs import start_ticks
from ..rundir import RunFolder, now_iso
from ..target.locate import RunHandle
from . import live, registry
from .preflight import PreflightReport


class Driver(Protocol):
    """What a handle asks of the launcher that started it (`launchers.base.Launcher` is one); a
    protocol so the handle does not import the launchers that import it."""

    def logs(self, handle: ServerHandle) -> str: ...

    def exit_code(self, handle: ServerHandle) -> int | None: ...

    def stop(self, handle: ServerHandle) -> None: ...


@dataclass
class ServerHandle:
    """A launched (or attached) server. Stop it with `stop()` or by leaving the `with` block."""

    launcher: str
    folder: RunFolder
    base_url: str
    platform: str
    model: str
    api_key_env: str | None = None
    emulated: bool = False
    owns: bool = True
    driver: Driver | None = field(default=None, repr=False)
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    pid: int | None = None
    pgid: int | None = None
    extra_pgids: list[int] = field(default_factory=list)
    """More process groups this server is made of (the emulated PD pools behind a router)."""
    backends: list[dict[str, str]] = field(default_factory=list)
    """The servers behind a router (name, url, role): the speed stage reads each one's /metrics."""
    router_policy: str | None = None
    """The router's --policy, with `backends`."""
    container: str | None = None
    slurm_job_id: str | None = None
    rehearsal: str | None = None
    """Set by launcher sglang-cpu: the origin label of everything measured against it (origin.REHEARSAL_LABEL)."""
    tokenizer: str | None = None
    """The served model's tokenizer directory, when the launcher knows it (the tiny checkpoint's)."""
    time_scale: float | None = None
    """Emulator only: the factor every simulated duration was multiplied by (speed results are rescaled)."""
    command: list[str] | None = None
    env: dict[str, str] = field(default_factory=dict)
    log_path: Path | None = None
    scripts: list[Path] = field(default_factory=list)
    started_at: str = ""
    ready_at: str | None = None
    server_info: dict[str, Any] | None = None
    readiness: dict[str, Any] | None = None
    """The readiness chain's last pass (target.health.Readiness.as_dict): how health was proven."""
    warnings: list[str] = field(default_factory=list)
    preflight: PreflightReport | None = None
    stopped: bool = False
    plan: LaunchPlan | None = field(default=None, repr=False)

    @property
    def run_dir(self) -> Path:
        return self.folder.path

    @property
    def run_id(self) -> str:
        return self.folder.run_id

    # ---- talking to it
    def api_key(self) -> str | None:
        """The key's value from the environment (None without one); never stored on the handle."""
        return (os.environ.get(self.api_key_env) or None) if self.api_key_env else None

    def headers(self) -> dict[str, str]:
        key = self.api_key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    @property
    def max_total_num_tokens(self) -> int | None:
        value = (self.server_info or {}).get("max_total_num_tokens")
        return int(value) if isinstance(value, (int, float)) else None

    def log_text(self) -> str:
        if self.driver is not None:
            return self.driver.logs(self)
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return ""

    def exit_code(self) -> int | None:
        """None while the server runs (or is not ours to watch); its exit code once it has exited."""
        if self.driver is not None:
            return self.driver.exit_code(self)
        return self.process.poll() if self.process is not None else None

    # ---- lifecycle
    def stop(self) -> None:
        """Stop the process group / container / job; safe to call any number of times."""
        live.unregister(self)
        if self.stopped or not self.owns:
            self.stopped = True
            return
        if self.driver is not None:
            self.driver.stop(self)
        self.stopped = True
        registry.forget(self.run_dir)
        self.folder.update_json(self.folder.process, stopped_at=now_iso())

    def detach(self) -> None:
        """Leave the server running after this Python process exits (teardown_run stops it later)."""
        live.unregister(self)

    def to_run_handle(self) -> RunHandle:
        """What later stages read: each RunHandle field from this handle's attribute of that name, plus
        where its processes and log are."""
        processes = {
            "pid": self.pid,
            "pgid": self.pgid,
            "container": self.container,
            "slurm_job_id": self.slurm_job_id,
            "log": str(self.log_path) if self.log_path else None,
        }
        return RunHandle.model_validate(self, from_attributes=True).model_copy(update=processes)

    def process_record(self) -> dict[str, Any]:
        """What process.json keeps so a later process (teardown_run) can stop this server."""
        return {
            "launcher": self.launcher,
            "pid": self.pid,
            "pgid": self.pgid,
            "pgid_ticks": start_ticks(self.pgid) if self.pgid else None,
            "extra_pgids": [[g, start_ticks(g)] for g in self.extra_pgids],
            "container": self.container,
            "slurm_job_id": self.slurm_job_id,
            "base_url": self.base_url,
            "started_at": self.started_at,
        }

    def summary(self) -> dict[str, Any]:
        info = self.server_info or {}
        summary: dict[str, Any] = self.folder.redact(
            {
                "base_url": self.base_url,
                "model": self.model,
                "launcher": self.launcher,
                "emulated": self.emulated or bool(info.get("emulated")),
                "sglang_version": info.get("version"),
                "max_total_num_tokens": self.max_total_num_tokens,
                "tp_size": info.get("tp_size"),
                "dp_size": info.get("dp_size"),
                "kv_cache_dtype": info.get("kv_cache_dtype"),
                "context_length": info.get("context_length"),
                "mem_fraction_static": info.get("mem_fraction_static"),
                "run_dir": str(self.run_dir),
            }
        )
        return summary

    def __enter__(self) -> ServerHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
