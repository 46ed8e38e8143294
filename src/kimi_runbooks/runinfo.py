"""The run folder and the handle file that links the stages of one run.

Every stage reads and writes only its run folder (outputs/<run id>/). The deploy stage writes
`handle.json` (where the server is and how to talk to it); invoke, speed and accuracy read it,
so any later stage can be re-run alone against a server that is still up.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

HANDLE_FILE = "handle.json"


class RunHandle(BaseModel):
    """How later stages reach the server of a run. Holds the key's env-var NAME, never the key."""

    model_config = ConfigDict(extra="allow")

    base_url: str
    model: str
    launcher: str
    platform: str | None = None
    api_key_env: str | None = None
    emulated: bool = False
    max_total_num_tokens: int | None = None
    run_id: str | None = None

    def api_key(self) -> str:
        """The key from the environment, or "EMPTY" (what SGLang accepts when it has none)."""
        if self.api_key_env:
            value = os.environ.get(self.api_key_env)
            if not value:
                raise RuntimeError(
                    f"the server expects an API key in ${self.api_key_env}, which is not set. "
                    f"Fix: export {self.api_key_env}=... before running this stage."
                )
            return value
        return "EMPTY"

    @property
    def openai_base_url(self) -> str:
        return self.base_url.rstrip("/") + "/v1"


def new_run_id(label: str = "run") -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "run"
    return f"{stamp}-{safe}"


def run_dir(path: str | Path | None = None, *, label: str = "run", base: str | Path = "outputs") -> Path:
    """The given run folder, or a new one under `base`; created either way."""
    folder = Path(path) if path else Path(base) / new_run_id(label)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write_handle(folder: str | Path, handle: RunHandle) -> Path:
    path = Path(folder) / HANDLE_FILE
    path.write_text(handle.model_dump_json(indent=2))
    return path


def read_handle(folder: str | Path) -> RunHandle:
    path = Path(folder) / HANDLE_FILE
    if not path.exists():
        raise FileNotFoundError(
            f"{path} does not exist: no server was deployed for this run folder. "
            "Fix: run the deploy stage first, or pass base_url (launcher=external)."
        )
    return RunHandle.model_validate_json(path.read_text())


def append_jsonl(path: str | Path, row: dict[str, Any]) -> None:
    """Append one result as it finishes, so a crash never loses finished work."""
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, default=str) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (killed mid-write) is skipped, not fatal."""
    p = Path(path)
    if not p.exists():
        return []
    rows = []
    for line in p.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows
