"""Wait until a server is ready: poll health, show the start-up phase, notice an early exit at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx

from ..progress import report_progress
from ..rundir import now_iso
from ..target import fetch_server_info
from .diagnose import diagnose, tail
from .errors import DeployError, DeployTimeout

if TYPE_CHECKING:
    from .handle import ServerHandle

POLL_INTERVAL = 0.25
HEARTBEAT_SECONDS = 30.0

PHASES: list[tuple[str, str]] = [
    ("fired up and ready to roll", "ready"),
    ("Capture cuda graph end", "CUDA graphs captured"),
    ("Capture cuda graph begin", "capturing CUDA graphs"),
    ("KV Cache is allocated", "KV cache allocated"),
    ("Load weight end", "weights loaded"),
    ("Load weight begin", "loading weights"),
    ("Init torch distributed", "initialising distributed"),
    ("server_args=", "parsing server args"),
]
"""Log markers (SGLang's wording) -> start-up phase shown while waiting; latest first."""


def current_phase(log: str) -> str | None:
    """The latest start-up phase named in the log (SGLang's own markers)."""
    best, best_pos = None, -1
    for marker, phase in PHASES:
        pos = log.rfind(marker)
        if pos > best_pos:
            best, best_pos = phase, pos
    return best


def _probe(client: httpx.Client, url: str) -> int | None:
    try:
        return client.get(url).status_code
    except httpx.HTTPError:
        return None


def is_ready(client: httpx.Client, base: str) -> bool:
    """/health_generate (older servers: /health) answers 200, and so do /health and /v1/models."""
    code = _probe(client, base + "/health_generate")
    if code == 404:  # older servers
        code = _probe(client, base + "/health")
    if code != 200:
        return False
    return _probe(client, base + "/health") == 200 and _probe(client, base + "/v1/models") == 200


def port_of(url: str) -> int | None:
    try:
        return httpx.URL(url).port
    except Exception:  # noqa: BLE001 - a malformed URL simply has no port to report
        return None


def wait_ready(
    handle: ServerHandle, timeout: float = 600.0, progress: bool = True, printer: Callable[[str], None] = print
) -> None:
    """Poll health until ready; show the start-up phase; notice an early exit at once."""
    base = handle.base_url.rstrip("/")
    started = time.monotonic()
    last_phase, last_beat = None, started
    version = handle.plan.config.sglang_version if handle.plan else None
    with httpx.Client(timeout=5.0, headers=handle.headers()) as client:
        while True:
            elapsed = time.monotonic() - started
            code = handle.exit_code()
            if code is not None:
                time.sleep(0.2)  # let the pump flush the last lines
                log = handle.log_text()
                diag = diagnose(
                    log, returncode=code, sglang_version=version, port=port_of(base), secret_env=handle.api_key_env
                )
                raise DeployError(f"the server exited during start-up after {elapsed:.1f}s: {diag}", diag, diag.excerpt)
            if is_ready(client, base):
                break
            phase = current_phase(handle.log_text()) or "starting"
            now = time.monotonic()
            if progress and (phase != last_phase or now - last_beat >= HEARTBEAT_SECONDS):
                printer(f"[{elapsed:7.1f}s] {phase}")
                report_progress(
                    handle.folder, "deploy", f"{phase} ({elapsed:.0f} s)", key="phase", milestone=phase != last_phase
                )
                last_phase, last_beat = phase, now
            if elapsed > timeout:
                excerpt = handle.folder.redact(tail(handle.log_text()))
                raise DeployTimeout(
                    f"the server at {base} was not ready after {timeout:g}s (polled {base}/health_generate); "
                    f"last start-up phase: {phase}. Fix: raise startup_timeout if it is still loading, "
                    "else read the log.",
                    None,
                    excerpt,
                )
            time.sleep(POLL_INTERVAL)
        handle.ready_at = now_iso()
        took = time.monotonic() - started
        report_progress(handle.folder, "deploy", f"ready at {base} after {took:.1f} s", milestone=True)
        if progress:
            printer(f"[{took:7.1f}s] ready at {base}")
        handle.server_info = fetch_server_info(base, handle.api_key())
        models = client.get(base + "/v1/models").json().get("data") or []
        if models:
            handle.model = models[0].get("id", handle.model)
