"""Stop a server a previous notebook or runbook left running, from what its run folder recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..rundir import RunFolder, now_iso
from .launchers import LAUNCHERS


def teardown_run(run_dir: str | Path | RunFolder) -> list[str]:
    """Stop the server recorded in `run_dir` (process.json / handle.json); idempotent.

    Returns what it did ("stopped process group N", "docker rm -f NAME", "scancel ID").
    """
    folder = run_dir if isinstance(run_dir, RunFolder) else RunFolder(run_dir)
    info: dict[str, Any] = {}
    for path in (folder.handle, folder.process):
        data = folder.read_json(path) if path.exists() else None
        if isinstance(data, dict):
            info.update({k: v for k, v in data.items() if v is not None})
    if info.get("launcher") == "external":
        return ["external server: not ours to stop"]
    done: list[str] = []
    # Each launcher stops what it recorded; the record may predate a launcher change, so every
    # launcher whose resource is named in it gets its turn (a pgid, a container, a job id).
    for cls in LAUNCHERS.values():
        for action in cls.stop_recorded(folder, info):
            if action not in done:
                done.append(action)
    if info:
        folder.update_json(folder.process, stopped_at=now_iso())
    return done
