"""Every server a run starts, remembered outside the run folder, so none is ever forgotten.

A run folder's process.json says what to stop, but only to someone who still knows the folder.
The registry keeps one small JSON file per live server in one folder per checkout
($KIMI_RUNBOOKS_REGISTRY, default ~/.cache/kimi-runbooks/servers/, then one sub-folder per
checkout): the run folder, the process group / container / Slurm job, when it started, and its
OWNER, the process whose end must end it (the runbook, or the notebook that launched it). A
server whose owner is gone is an orphan: `kimi-runbooks teardown --all` and the next launch from
the same checkout stop it and say so; another checkout's servers are listed, never stopped by
them (one user's two checkouts are two projects). A server left running on purpose (a deploy
notebook with keep_running and no runbook around it) is "detached": listed, stopped only by an
explicit teardown. An entry that cannot be read is reported and skipped, never raised.
"""

from __future__ import annotations

import hashlib
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..paths import REPO_ROOT
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


def registry_root() -> Path:
    """Where every checkout's registry of this user lives."""
    env = os.environ.get(REGISTRY_ENV)
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kimi-runbooks" / "servers"


def checkout_scope(checkout: Path | None = None) -> str:
    """The sub-folder of a checkout's entries (default: this one): its folder name and a hash of its path."""
    resolved = (checkout or REPO_ROOT).resolve()
    digest = hashlib.sha256(str(resolved).encode()).hexdigest()[:10]
    return f"{resolved.name or 'root'}-{digest}"


def registry_dir() -> Path:
    """This checkout's registry: the servers its runs started."""
    return registry_root() / checkout_scope()


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
    checkout: str = ""
    """The checkout whose run started it (its own registry folder says so too)."""
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
        checkout=str(REPO_ROOT.resolve()),
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
    """The entry of `run_dir`: this checkout's, else another's (a run folder named by path is the
    same server whichever checkout started it)."""
    for path in _paths_of(run_dir):
        entry = _load(path)
        if entry is not None:
            return entry
    return None


def forget(run_dir: str | Path) -> None:
    """Drop the entry of `run_dir` (its server was stopped), wherever it was registered."""
    for path in _paths_of(run_dir):
        path.unlink(missing_ok=True)


def _paths_of(run_dir: str | Path) -> list[Path]:
    """Where an entry of `run_dir` can be: this checkout's folder first, then other checkouts' and
    the registry root (entries written before registries were per checkout)."""
    key, own, root = _key(run_dir), registry_dir(), registry_root()
    others = sorted(p for p in root.glob(f"*/{key}") if p.parent != own) if root.is_dir() else []
    return [own / key, *others, root / key]


def _load(path: Path) -> Entry | None:
    try:
        return _parse(path)
    except (OSError, ValueError):
        return None


def _parse(path: Path) -> Entry:
    """One entry file; ValueError (naming the file and the fix) when it is not an entry."""
    data = read_json(path)
    if data is None:
        raise FileNotFoundError(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a registry entry (a JSON object). Fix: delete it")
    try:
        return Entry(**{k: v for k, v in data.items() if k in Entry.__dataclass_fields__})
    except TypeError as exc:
        raise ValueError(f"{path} is not a registry entry ({exc}). Fix: delete it") from None


@dataclass
class Scan:
    """A registry folder read: its entries on this host, oldest first, and one line per file that
    could not be read (reported by whoever lists or stops servers, never raised)."""

    entries: list[Entry]
    unreadable: list[str]


def scan(folder: Path | None = None) -> Scan:
    """Read one registry folder (default: this checkout's)."""
    folder = registry_dir() if folder is None else folder
    found: list[Entry] = []
    unreadable: list[str] = []
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in paths:
        try:
            found.append(_parse(path))
        except FileNotFoundError:
            continue  # stopped and forgotten meanwhile
        except (OSError, ValueError) as exc:
            unreadable.append(
                f"registry entry {path} is unreadable ({exc}); the server it recorded, if still running, "
                "must be found by hand (ps, docker ps, squeue) and stopped; then delete the file"
            )
    host = socket.gethostname()
    mine = sorted((e for e in found if e.host in ("", host)), key=lambda e: e.started_at)
    return Scan(mine, unreadable)


def entries() -> list[Entry]:
    """Every server this checkout's registry remembers on this machine, oldest first."""
    return scan().entries


def other_checkouts() -> list[Entry]:
    """Servers other checkouts of this user registered (and entries from before registries were per
    checkout): listed for the user, never stopped from here."""
    root, own = registry_root(), registry_dir()
    if not root.is_dir():
        return []
    folders = [root, *sorted(p for p in root.iterdir() if p.is_dir() and p != own)]
    return [e for f in folders for e in scan(f).entries]
