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

import httpx
from pydantic import BaseModel, ConfigDict

HANDLE_FILE = "handle.json"
SERVER_INFO_PATHS = ("/server_info", "/get_server_info")  # newer SGLang, then older releases


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


def fetch_server_info(base_url: str, api_key: str | None = None, timeout: float = 5.0) -> dict[str, Any] | None:
    """SGLang's /server_info (older releases: /get_server_info) as a dict; None when the server
    does not answer 200 with a JSON object (down, wrong path, a proxy's HTML or error page).

    The one place this is fetched, so every stage agrees on what "no live info" means.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    base = base_url.rstrip("/")
    for path in SERVER_INFO_PATHS:
        try:
            resp = httpx.get(base + path, headers=headers, timeout=timeout)
        except httpx.HTTPError:
            return None
        if resp.status_code != 200:
            continue
        try:
            info = resp.json()
        except ValueError:
            return None
        return info if isinstance(info, dict) else None
    return None


def served_model(base_url: str, api_key: str | None = None, timeout: float = 10.0) -> str:
    """The first model id GET {base_url}/v1/models lists; ValueError naming the fix otherwise."""
    url = base_url.rstrip("/").removesuffix("/v1") + "/v1/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(url, headers=headers, timeout=timeout)
        resp.raise_for_status()
        return str(resp.json()["data"][0]["id"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"base_url was given without model, and the served model name could not be read "
                         f"from {url} ({type(exc).__name__}: {exc}). Fix: pass model=<served name> "
                         "(the --served-model-name of the server).") from None


def resolve_target(run_dir: str | Path | None = None, base_url: str | None = None, model: str | None = None,
                   api_key_env: str | None = None, platform: str | None = None) -> RunHandle:
    """The server a stage talks to: the run folder's handle.json (the given values override it),
    or an external base_url. Without model the served name is asked from /v1/models, never
    guessed: a wrong name would make every later request fail."""
    if not base_url:
        if not run_dir:
            raise ValueError("no server given: pass run_dir (a deploy stage's run folder with handle.json) "
                             "or base_url (and model) of a running server.")
        handle = read_handle(run_dir)
        updates = {k: v for k, v in {"model": model, "api_key_env": api_key_env, "platform": platform}.items() if v}
        return handle.model_copy(update=updates) if updates else handle
    base = base_url.rstrip("/").removesuffix("/v1")
    handle = RunHandle(base_url=base, model=model or "", launcher="external", api_key_env=api_key_env,
                       platform=platform)
    if not model:
        key = handle.api_key()  # a clear error when api_key_env names an unset variable
        handle.model = served_model(base, None if key == "EMPTY" else key)
    return handle


def source_label(emulated: bool, run_id: str | None = None, *, upper: bool = False) -> str:
    """Where a number came from: "emulated" or "measured" (+ " (run <id>)"); upper=True gives
    "EMULATED", the shouting form tables use so an emulated row is never mistaken for hardware."""
    label = "emulated" if emulated else "measured"
    if upper and emulated:
        label = label.upper()
    return f"{label} (run {run_id})" if run_id else label


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
