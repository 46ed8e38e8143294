"""How a stage finds the server it talks to: the run folder's handle.json, or an external URL.

The deploy stage writes `handle.json` (where the server is and how to talk to it); invoke, speed
and accuracy read it, so any later stage can be re-run alone against a server that is still up.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict

from ..rundir import RunFolder
from .health import BaseUrlError, check_server, normalize_base_url

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
    rehearsal: str | None = None
    """Real SGLang serving a tiny model on the CPU (launcher sglang-cpu): the label its numbers carry."""
    max_total_num_tokens: int | None = None
    run_id: str | None = None
    time_scale: float | None = None
    """Emulator only: simulated durations were multiplied by this (1: real time)."""
    readiness: dict[str, Any] | None = None
    """How deploy found the server ready (target.health.Readiness.as_dict): health method, steps."""
    tokenizer: str | None = None
    """The served model's tokenizer (a local directory or hub id), when known; the speed stage uses it."""
    backends: list[dict[str, str]] = []
    """The servers behind a router (name, url, role); empty for one server."""
    router_policy: str | None = None
    """The router's --policy (sglang-router's default when the plan gives none: cache_aware)."""

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


def write_handle(folder: RunFolder, handle: RunHandle) -> Path:
    folder.add_secret_env(handle.api_key_env)
    return folder.save_json(folder.handle, handle.model_dump(mode="json"))


def read_handle(folder: RunFolder) -> RunHandle:
    path = folder.handle
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


def served_model(
    base_url: str, api_key: str | None = None, timeout: float = 10.0, *, api_key_env: str | None = None
) -> str:
    """The one model GET {base_url}/v1/models lists; ValueError naming the cause and the fix
    otherwise (unreachable, key refused, several models listed)."""
    key = None if api_key in (None, "", "EMPTY") else api_key
    result = check_server(base_url, None, api_key_env=api_key_env, api_key=key, timeout=timeout, health=False)
    if result.model is None:
        raise ValueError(
            "base_url was given without model, and the served model name could not be read from "
            f"{result.base_url}/v1/models: {result.message()}"
        )
    return result.model


def resolve_target(
    folder: RunFolder | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    platform: str | None = None,
) -> RunHandle:
    """The server a stage talks to: the run folder's handle.json (the given values override it),
    or an external base_url. Without model the served name is asked from /v1/models, never
    guessed: a wrong name would make every later request fail."""
    if not base_url:
        if folder is None:
            raise ValueError(
                "no server given: pass run_dir (a deploy stage's run folder with handle.json) "
                "or base_url (and model) of a running server."
            )
        handle = read_handle(folder)
        updates = {k: v for k, v in {"model": model, "api_key_env": api_key_env, "platform": platform}.items() if v}
        return handle.model_copy(update=updates) if updates else handle
    try:
        base, notes = normalize_base_url(base_url)
    except BaseUrlError as exc:
        raise ValueError(str(exc)) from None
    for note in notes:
        print(f"note: {note}")
    handle = RunHandle(
        base_url=base, model=model or "", launcher="external", api_key_env=api_key_env, platform=platform
    )
    handle.api_key()  # a clear error when api_key_env names an unset variable
    if not model:
        handle.model = served_model(base, api_key_env=api_key_env)
    return handle
