"""Every server a run starts, remembered outside the run folder, so none is ever forgotten.

A run folder's process.json says what to stop, but only to someone who still knows the folder.
The registry keeps one small JSON file per live server in one place per user
($KIMI_RUNBOOKS_REGISTRY, default ~/.cache/kimi-runbooks/servers/): the run folder, the process
group / container / Slurm job, when it started, and its OWNER, the process whose end must end it
(the runbook, or the notebook that launched it). A server whose owner is gone is an orphan:
`kimi-runbooks teardown --all` and the next launch stop it and say so. A server left running on
purpose (a deploy notebook with keep_running and no runbook around it) is "detached": listed,
stopped only by an explicit teardown.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..procs import process_alive, start_ticks
from ..rundir import RunFolder, read_json


class StartedServer(Protocol):
    """What the registry records of a server just started (`handle.ServerHandle` is one)."""

    @property
    def run_dir(self) -> Path: ...

    def process_record(self) -> dict[str, Any]:
        """What stops it (launcher, pid, pgid and its start ticks, container, Slurm job, base_url,
        started_at): the same record process.json keeps."""
        ...


REGISTRY_ENV = "KIMI_RUNBOOKS_REGISTRY"
OWNER_ENV = "KIMI_RUNBOOKS_OWNER"
"""`pid:ticks` of the runbook process; set for its stages, so the server it launches (from a stage
kernel that exits after the deploy stage) is owned by the runbook, not by that kernel."""


def registry_dir() -> Path:
    env = os.environ.get(REGISTRY_ENV)
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kimi-runbooks" / "servers"


def _key(run_dir: str | Path) -> str:
    return hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:16] + ".json"


def owner_token(pid: int | None = None) -> str:
    """`pid:ticks` naming one process for good (a recycled pid does not match)."""
    pid = pid or os.getpid()
    return f"{pid}:{start_ticks(pid) or 0}"


def current_owner() -> str:
    """The runbook around this process when there is one, else this process."""
    return os.environ.get(OWNER_ENV) or owner_token()


@dataclass
class Entry:
    """One live server as the registry remembers it."""

    run_dir: str
    launcher: str
    owner: str | None  # pid:ticks; None: detached (left running on purpose)
    started_at: str = ""
    pid: int | None = None
    pgid: int | None = None
    pgid_ticks: int | None = None
    container: str | None = None
    slurm_job_id: str | None = None
    base_url: str | None = None
    host: str = ""
    run_token: str | None = None
    extra_pgids: list[list[int]] = field(default_factory=list)
    """[pgid, start ticks] of the other groups a fleet started (replicas, PD pools, the router)."""

    @property
    def owner_pid(self) -> int | None:
        return int(self.owner.split(":")[0]) if self.owner else None

    def owner_alive(self) -> bool:
        if not self.owner:
            return False
        pid, _, ticks = self.owner.partition(":")
        return process_alive(int(pid), int(ticks) if ticks and ticks != "0" else None)

    @property
    def detached(self) -> bool:
        return self.owner is None

    def record(self) -> dict[str, Any]:
        """The fields a launcher's stop_recorded reads (as in process.json)."""
        return {k: v for k, v in asdict(self).items() if v is not None}

    def describe(self) -> str:
        what = [
            f"process group {self.pgid}" if self.pgid else "",
            f"container {self.container}" if self.container else "",
            f"slurm job {self.slurm_job_id}" if self.slurm_job_id else "",
        ]
        owner = "detached" if self.detached else f"owner pid {self.owner_pid}"
        return (
            f"{self.launcher} server of {self.run_dir} ({', '.join(w for w in what if w) or 'no process recorded'}; "
            f"{owner}; started {self.started_at or '?'})"
        )


def record(handle: StartedServer, run_token: str | None = None) -> Entry:
    """Remember a server `launch()` just started (one entry per run folder)."""
    entry = Entry(
        run_dir=str(handle.run_dir.resolve()),
        owner=current_owner(),
        host=socket.gethostname(),
        run_token=run_token,
        **handle.process_record(),
    )
    _save(entry)
    return entry


def _save(entry: Entry) -> None:
    RunFolder.create(registry_dir()).save_json(_key(entry.run_dir), asdict(entry))


def detach(run_dir: str | Path) -> None:
    """The server of `run_dir` is left running on purpose: no owner, never reaped automatically."""
    entry = get(run_dir)
    if entry is not None:
        entry.owner = None
        _save(entry)


def get(run_dir: str | Path) -> Entry | None:
    return _load(registry_dir() / _key(run_dir))


def forget(run_dir: str | Path) -> None:
    """Drop the entry of `run_dir` (its server was stopped)."""
    (registry_dir() / _key(run_dir)).unlink(missing_ok=True)


def _load(path: Path) -> Entry | None:
    try:
        data = read_json(path)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    try:
        return Entry(**{k: v for k, v in data.items() if k in Entry.__dataclass_fields__})
    except TypeError:
        return None


def entries() -> list[Entry]:
    """Every server the registry remembers on this machine, oldest first."""
    folder = registry_dir()
    if not folder.is_dir():
        return []
    found = [e for p in sorted(folder.glob("*.json")) if (e := _load(p)) is not None]
    host = socket.gethostname()
    return sorted((e for e in found if e.host in ("", host)), key=lambda e: e.started_at)
