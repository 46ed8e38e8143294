"""run_dir/manifest.json: what ran, where, with which versions, so a result can be reproduced.

Everything is redacted (and redacted again by the run folder with the run's secret names);
hardware comes from the vendor's smi tool when it is present and is recorded as "unavailable"
otherwise (never guessed).
"""

from __future__ import annotations

import json
import os
import platform as pyplatform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from ..paths import REPO_ROOT
from ..plan.shell import shell_command
from ..rundir import now_iso
from ..secrets import redact
from ..tools import envs as toolenv
from .handle import ServerHandle

PACKAGES = (
    "kimi-runbooks",
    "httpx",
    "openai",
    "pydantic",
    "starlette",
    "uvicorn",
    "papermill",
    "pandas",
    "plotly",
    "sglang",
    "torch",
)


def git_commit(root: str | Path | None = None) -> str | None:
    """The project's commit (with `-dirty` when the tree has local changes), or None outside git."""
    root = Path(root) if root else REPO_ROOT
    git = shutil.which("git")
    if not git:
        return None
    try:
        head = subprocess.run([git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode:
            return None
        dirty = subprocess.run(
            [git, "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def tool_env_versions() -> dict[str, Any]:
    """Versions of the tools in each tool environment, or why an env could not be read."""
    out: dict[str, Any] = {}
    for name in toolenv.TOOLS:
        try:
            out[name] = toolenv.versions(name)
        except Exception as exc:  # noqa: BLE001 - a missing or broken tool env must not fail the deploy
            out[name] = f"unavailable ({type(exc).__name__}: {str(exc)[:120]})"
    return out


def _run(argv: list[str], environ: dict[str, str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=environ)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def hardware_inventory(environ: dict[str, str] | None = None) -> dict[str, Any] | str:
    """Device names, memory and driver from nvidia-smi / rocm-smi / npu-smi, else "unavailable"."""
    env = dict(os.environ if environ is None else environ)

    def which(tool: str) -> str | None:
        return shutil.which(tool, path=env.get("PATH", os.defpath))

    if tool := which("nvidia-smi"):
        out = _run([tool, "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader,nounits"], env)
        if out is not None:
            devices = []
            for line in out.splitlines():
                parts = [p.strip() for p in line.split(",")]
                if len(parts) >= 4:
                    devices.append({"index": parts[0], "name": parts[1], "memory_mib": parts[2], "driver": parts[3]})
            return {"tool": "nvidia-smi", "devices": devices}
    if tool := which("rocm-smi"):
        out = _run([tool, "--showproductname", "--showmeminfo", "vram", "--showdriverversion", "--json"], env)
        if out is not None:
            try:
                return {"tool": "rocm-smi", "devices": json.loads(out)}
            except ValueError:
                return {"tool": "rocm-smi", "raw": out[:4000]}
    if tool := which("npu-smi"):
        out = _run([tool, "info"], env)
        if out is not None:
            return {"tool": "npu-smi", "raw": out[:8000]}
    return "unavailable"


def build_manifest(handle: ServerHandle, environ: dict[str, str] | None = None) -> dict[str, Any]:
    """What ran, redacted: the handle's launch facts, the versions around it and the hardware."""
    server_info = handle.server_info
    plan = handle.plan
    info = dict(server_info or {})
    server_args = {k: v for k, v in info.items() if k not in ("internal_states", "version", "emulator")}
    manifest = {
        "run_id": handle.run_id,
        "started_at": handle.started_at,
        "ready_at": handle.ready_at,
        "written_at": now_iso(),
        "platform": handle.platform,
        "model": handle.model,
        "launcher": handle.launcher,
        "emulated": handle.emulated or bool(info.get("emulated")),
        "base_url": handle.base_url,
        "command": shell_command(handle.command, handle.env) if handle.command else None,
        "env": handle.env,
        "project_commit": git_commit(),
        "python": sys.version.split()[0],
        "host_os": pyplatform.platform(),
        "packages": package_versions(),
        "tool_envs": tool_env_versions(),
        "sglang_version": info.get("version"),
        "max_total_num_tokens": info.get("max_total_num_tokens"),
        "server_args": server_args or None,
        "hardware": hardware_inventory(environ),
        "plan": plan.as_dict() if plan else None,
        "preflight": handle.preflight.as_rows() if handle.preflight else None,
        "warnings": handle.warnings,
    }
    clean: dict[str, Any] = redact(manifest)
    return clean
