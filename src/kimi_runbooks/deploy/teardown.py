"""Stop what a run left running: its server (from process.json or the registry) and every process
that still carries the run's token (bench client, tool runs, stage kernels)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..procs import RUN_TOKEN_ENV, STOP_GRACE_SECONDS, processes_with_token, stop_processes
from ..rundir import RunFolder, now_iso
from . import registry
from .launchers import LAUNCHERS

SWEEP_GRACE_SECONDS = 5.0


def teardown_run(
    folder: RunFolder,
    *,
    tokens: list[str] | None = None,
    folder_token: bool = True,
    grace: float = STOP_GRACE_SECONDS,
) -> list[str]:
    """Stop the server recorded in `folder` (process.json / handle.json) and the processes of
    the run (its token, from the registry, `tokens` and, with `folder_token`, runbook.json);
    idempotent. Whatever ignores SIGTERM is killed after `grace` seconds (the sweep's grace is at
    most SWEEP_GRACE_SECONDS).

    Returns what it did ("stopped process group N", "docker rm -f NAME", "scancel ID",
    "stopped 2 processes of the run (pids ...)"), and which record it could not read (skipped: the
    registry and the run's token still name what to stop).
    """
    info: dict[str, Any] = {}
    unreadable: list[str] = []
    for path in (folder.handle, folder.process):
        try:
            data = folder.read_json(path) if path.exists() else None
        except ValueError as exc:
            unreadable.append(f"skipped {path.name}: {exc}")
            continue
        if isinstance(data, dict):
            info.update({k: v for k, v in data.items() if v is not None and k != "previous"})
    entry = registry.get(folder.path)
    if info.get("launcher") == "external":
        registry.forget(folder.path)
        return ["external server: not ours to stop"]
    done = unreadable + stop_record(folder, info, grace)
    if entry is not None:
        for action in stop_record(folder, entry.record(), grace):  # the registry may know a newer server
            if action not in done:
                done.append(action)
    done += sweep(_tokens(folder if folder_token else None, entry, tokens), min(grace, SWEEP_GRACE_SECONDS))
    registry.forget(folder.path)
    if info and folder.path.is_dir() and not unreadable:
        folder.update_json(folder.process, stopped_at=now_iso())
    return done


def stop_record(folder: RunFolder, info: dict[str, Any], grace: float = STOP_GRACE_SECONDS) -> list[str]:
    """Each launcher stops what it recorded; the record may predate a launcher change, so every
    launcher whose resource is named in it gets its turn (a pgid, a container, a job id)."""
    done: list[str] = []
    if info.get("launcher") == "external":
        return done
    for cls in LAUNCHERS.values():
        for action in cls.stop_recorded(folder, info, grace):
            if action not in done:
                done.append(action)
    return done


def _tokens(folder: RunFolder | None, entry: registry.Entry | None, extra: list[str] | None) -> list[str]:
    found = list(extra or [])
    try:
        params = folder.read_json(folder.runbook) if folder is not None and folder.runbook.exists() else None
    except ValueError:  # cut short: the registry's token, if any, is the run's
        params = None
    if isinstance(params, dict) and params.get("run_token"):
        found.append(str(params["run_token"]))
    if entry is not None and entry.run_token:
        found.append(entry.run_token)
    return sorted(set(found))


def sweep(tokens: list[str], grace: float = SWEEP_GRACE_SECONDS) -> list[str]:
    """Stop every process (of this user) whose environment carries one of the run tokens."""
    pids = sorted({p for t in tokens for p in processes_with_token(t)})
    if not pids:
        return []
    stopped = stop_processes(pids, grace=grace)
    return [f"stopped {len(stopped)} process(es) of the run carrying its {RUN_TOKEN_ENV} (pids {stopped})"]


@dataclass
class OrphanSweep:
    """What `stop_orphans` did: one line per server stopped, one per record it could not read."""

    stopped: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    def report(self) -> str:
        """The lines a run or `teardown --all` prints ("" when there was nothing to do)."""
        lines = []
        if self.stopped:
            lines.append(f"stopped {len(self.stopped)} orphaned server(s) from earlier runs of this checkout:")
            lines += [f"  - {x}" for x in self.stopped]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} unreadable record(s):")
            lines += [f"  - {x}" for x in self.skipped]
        return "\n".join(lines)


def stop_orphans(*, include_detached: bool = False) -> OrphanSweep:
    """Stop every server this checkout registered whose owner is gone (and, with
    `include_detached`, those left running on purpose); entries of servers already gone are dropped.
    An unreadable registry entry or run record is reported in `skipped`, never raised."""
    found = registry.scan()
    result = OrphanSweep(skipped=list(found.unreadable))
    for entry in found.entries:
        if entry.owner_alive() or (entry.detached and not include_detached):
            continue
        folder = RunFolder(entry.run_dir) if Path(entry.run_dir).is_dir() else None
        if folder is not None:  # only the orphan's own token: a new run may already use the folder
            done = teardown_run(folder, folder_token=False)
        else:  # the run folder was deleted: the registry alone says what to stop
            done = stop_record(RunFolder(registry.registry_dir()), entry.record())
            done += sweep([entry.run_token] if entry.run_token else [])
            registry.forget(entry.run_dir)
        result.skipped += [f"{entry.run_dir}: {d}" for d in done if d.startswith("skipped ")]
        done = [d for d in done if not d.startswith(("external", "skipped "))]
        if done:
            result.stopped.append(f"{entry.describe()}: {'; '.join(done)}")
            if folder is not None:
                folder.append_jsonl(
                    folder.stages,
                    {
                        "stage": "teardown",
                        "status": "ok",
                        "detail": "orphaned (its owner is gone); stopped later: " + "; ".join(done),
                        "finished_at": now_iso(),
                    },
                )
    return result
