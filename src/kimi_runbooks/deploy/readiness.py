"""Wait until a server is ready: run the readiness chain, show the start-up phase, notice an early exit at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx

from ..progress import report_progress
from ..rundir import now_iso
from ..target.health import Readiness, check_server
from ..target.locate import fetch_server_info
from ..target.tls import verified_tls
from .diagnose import diagnose, tail
from .errors import DeployError, DeployTimeout

if TYPE_CHECKING:
    from .handle import ServerHandle

POLL_INTERVAL = 0.25
HEARTBEAT_SECONDS = 30.0
PROBE_TIMEOUT = 10.0

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


def port_of(url: str) -> int | None:
    try:
        return httpx.URL(url).port
    except Exception:  # noqa: BLE001 - a malformed URL simply has no port to report
        return None


def heartbeat_interval(timeout: float) -> float:
    """Seconds between heartbeat lines: every 30 s on long waits, more often on short ones."""
    return min(HEARTBEAT_SECONDS, max(2.0, timeout / 5))


def wait_ready(
    handle: ServerHandle,
    timeout: float = 600.0,
    progress: bool = True,
    printer: Callable[[str], None] = print,
    model_source: str = "the plan's served model name",
) -> Readiness:
    """Run the readiness chain (target.health) until ready; stop at once on a permanent failure
    (bad URL, unknown host, TLS, refused key, wrong model name) or an early exit of the server;
    print the start-up phase and a heartbeat while waiting. The served model name is checked
    against /v1/models, never replaced by what the server lists."""
    base = handle.base_url.rstrip("/")
    started = time.monotonic()
    beat = heartbeat_interval(timeout)
    last_phase, last_beat = None, started
    version = handle.plan.config.sglang_version if handle.plan else None

    def say(text: str) -> None:
        if progress:
            printer(f"[{time.monotonic() - started:7.1f}s] {text}")

    say(f"waiting for {base} to be ready (model {handle.model!r}, timeout {timeout:g}s)")
    with httpx.Client(timeout=PROBE_TIMEOUT, verify=verified_tls()) as client:
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
            result = check_server(
                base,
                handle.model or None,
                api_key_env=handle.api_key_env,
                timeout=PROBE_TIMEOUT,
                client=client,
                model_source=model_source,
            )
            if result.ok:
                break
            excerpt = handle.folder.redact(tail(handle.log_text())) if handle.log_path else ""
            if result.permanent:
                say(f"not ready: {result.message()}")
                report_progress(handle.folder, "deploy", f"not ready: {result.message()}", milestone=True)
                raise DeployError(f"the server at {base} is not usable: {result.message()}", None, excerpt)
            phase = current_phase(handle.log_text()) or ("starting" if handle.owns else "waiting")
            now = time.monotonic()
            if phase != last_phase or now - last_beat >= beat:
                say(f"{phase}; {result.cause()}")
                report_progress(
                    handle.folder,
                    "deploy",
                    f"{phase}; {result.cause()} ({elapsed:.0f} s)",
                    key="phase",
                    milestone=phase != last_phase,
                )
                last_phase, last_beat = phase, now
            if elapsed > timeout:
                step = result.failure
                fix = (
                    "raise startup_timeout if it is still loading, else read the log"
                    if handle.owns or step is None or not step.fix
                    else f"{step.fix} (or raise startup_timeout if it is still starting)"
                )
                raise DeployTimeout(
                    f"the server at {base} was not ready after {timeout:g}s; last check: {result.cause()}; "
                    f"last start-up phase: {phase}. Fix: {fix}.",
                    None,
                    excerpt,
                )
            time.sleep(POLL_INTERVAL)
    handle.ready_at = now_iso()
    handle.readiness = result.as_dict()
    say(f"ready at {base}: health via {result.health_method}; model {result.model!r}")
    took = time.monotonic() - started
    report_progress(handle.folder, "deploy", f"ready at {base} after {took:.1f} s", milestone=True)
    handle.server_info = fetch_server_info(base, handle.api_key())
    return result
