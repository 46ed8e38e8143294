"""inspect-ai driver: inspect_evals/gpqa_diamond with the published flags, the .eval log read
by inspect's own reader (run inside the inspect env) for accuracy and stderr.

Offline sites: inspect_evals downloads gpqa_diamond.csv at run time into
``$INSPECT_EVALS_CACHE_DIR/gpqa/gpqa_diamond.csv`` (default ~/.cache/inspect_evals) and skips the
download when a file with the right SHA-256 is there. ``stage_gpqa_csv`` puts a staged copy there.
A CSV that is not the official file (a subset, a tiny CI set) runs through a small local task
that uses the same record mapping, solver and scorer as inspect_evals' gpqa_diamond.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..rundir import RunFolder
from ..tools.scripts import script
from .common import StageMissing, SuiteFailed, ToolJob, ToolRun, fail_message, given_flags, run_tool
from .references import reference_entry

TASK = "inspect_evals/gpqa_diamond"
#: SHA-256 of the official gpqa_diamond.csv as pinned by inspect_evals 0.26 (gpqa.py).
GPQA_DIAMOND_SHA256 = "41d1213cd7a4998605a26c2798500652572007161b3a92817ba46b35befcd305"
GPQA_URL = "https://openaipublic.blob.core.windows.net/simple-evals/gpqa_diamond.csv"


@dataclass(frozen=True)
class InspectConfig:
    """Flags of `inspect eval`, each named as its field (build_args; cot and dataset_path are task
    arguments); None leaves the task default (epochs: gpqa_diamond's 4)."""

    max_tokens: int | None = 131072
    temperature: float | None = 1.0
    top_p: float | None = 0.95
    max_connections: int | None = 128
    cot: bool = True
    epochs: int | None = None
    limit: int | None = None
    dataset_path: str | None = None  # a staged GPQA-format CSV

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def published_config() -> InspectConfig:
    """Flags of the published gpqa-diamond command (params/references)."""
    s = reference_entry("gpqa-diamond").get("settings") or {}
    return InspectConfig(
        max_tokens=s.get("max_tokens", 131072),
        temperature=s.get("temperature", 1.0),
        top_p=s.get("top_p", 0.95),
        max_connections=s.get("max_connections", 128),
        cot=bool(s.get("cot", True)),
    )


def smoke_config(limit: int = 2, dataset_path: str | None = None) -> InspectConfig:
    return InspectConfig(max_tokens=512, max_connections=4, epochs=1, limit=limit, dataset_path=dataset_path)


def sha256_of(path: str | Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def default_cache_dir() -> Path:
    return Path(os.environ.get("INSPECT_EVALS_CACHE_DIR") or "~/.cache/inspect_evals").expanduser()


def stage_gpqa_csv(csv: str | Path, cache_dir: str | Path, folder: RunFolder | None = None) -> Path:
    """Copy the official CSV where inspect_evals looks for it (cache_dir/gpqa/gpqa_diamond.csv)."""
    dest = Path(cache_dir) / "gpqa" / "gpqa_diamond.csv"
    if not dest.exists() or sha256_of(dest) != sha256_of(csv):
        (folder or RunFolder(cache_dir)).save_copy(csv, dest)
    return dest


def task_args(cfg: InspectConfig, work_dir: Path, folder: RunFolder | None = None) -> tuple[list[str], dict[str, str]]:
    """(task + -T args, extra env) for the official task or the local-CSV task."""
    cot = ["-T", f"cot={cfg.cot}"]
    if cfg.dataset_path is None:
        return [TASK, *cot], {}
    csv = Path(cfg.dataset_path)
    if not csv.is_file():
        raise StageMissing(
            f"GPQA CSV {csv} not found. Fix: download {GPQA_URL} on a connected machine and copy it there "
            "(or pass dataset_path=None to let inspect_evals download it)."
        )
    if sha256_of(csv) == GPQA_DIAMOND_SHA256:
        cache = work_dir / "inspect_evals_cache"
        stage_gpqa_csv(csv, cache, folder)
        return [TASK, *cot], {"INSPECT_EVALS_CACHE_DIR": str(cache.resolve())}
    task_file = (folder or RunFolder(work_dir)).save_copy(script("gpqa_local.py"), work_dir / "gpqa_local.py")
    return [f"{task_file}@gpqa_local", "-T", f"csv={csv.resolve()}", *cot], {}


def build_args(cfg: InspectConfig, *, model: str, base_url: str, log_dir: Path, task: list[str]) -> list[str]:
    """`inspect eval ...` arguments (without the interpreter); base_url is the OpenAI /v1 base."""
    args = [
        "eval",
        *task,
        "--model",
        f"openai/{model}",
        "--model-base-url",
        base_url,
        "--log-dir",
        str(log_dir),
        "--log-format",
        "eval",
        "--display",
        "plain",
        # SGLang serves chat completions, not OpenAI's Responses API (inspect's default for openai/)
        "-M",
        "responses_api=false",
    ]
    # cot and the dataset are task arguments (task_args); the rest are `inspect eval` flags of their names
    return args + given_flags(cfg, skip=("cot", "dataset_path"))


def read_eval_log(path: str | Path, python: str | Path) -> dict[str, Any]:
    """Header of an .eval log as JSON, read by inspect_ai.log.read_eval_log in the inspect env."""
    proc = subprocess.run(
        [str(python), str(script("read_inspect_log.py")), str(path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise SuiteFailed(f"reading {path} with inspect_ai.log.read_eval_log failed:\n{proc.stderr[-2000:]}")
    summary: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return summary


def newest_log(log_dir: Path) -> Path:
    logs = sorted(Path(log_dir).glob("*.eval"), key=lambda p: p.stat().st_mtime)
    if not logs:
        raise FileNotFoundError(f"no .eval log in {log_dir}")
    return logs[-1]


def log_metrics(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """accuracy (with stderr) from the log's first scorer; n = completed samples (x epochs)."""
    if summary.get("status") != "success":
        raise SuiteFailed(f"inspect log status is {summary.get('status')!r}: {summary.get('error')}")
    if not summary.get("scores"):
        raise SuiteFailed("inspect log has no scores")
    metrics = summary["scores"][0]["metrics"]
    n = int(summary.get("completed_samples") or summary.get("total_samples") or 0) or None
    out = []
    if "accuracy" in metrics:
        out.append(
            {
                "metric": "accuracy",
                "value": float(metrics["accuracy"]),
                "n": n,
                "kind": "rate",
                "stderr": float(metrics["stderr"]) if metrics.get("stderr") is not None else None,
            }
        )
    for name, value in metrics.items():
        if name not in ("accuracy", "stderr") and isinstance(value, (int, float)):
            out.append({"metric": name, "value": float(value), "n": n, "kind": "value"})
    return out


def run(
    cfg: InspectConfig, job: ToolJob, *, python: Path
) -> tuple[ToolRun, Path, dict[str, Any], list[dict[str, Any]]]:
    """Run the task in the inspect env, then read the newest .eval log it wrote."""
    server, work_dir = job.server, job.out_dir
    folder = job.writer()
    log_dir = work_dir / RunFolder.TOOL_LOGS
    task, env = task_args(cfg, work_dir, folder)
    argv = [
        str(python),
        "-m",
        "inspect_ai",
        *build_args(cfg, model=server.model, base_url=server.base_url, log_dir=log_dir, task=task),
    ]
    env = {
        **env,
        "OPENAI_API_KEY": server.api_key,
        "OPENAI_BASE_URL": server.base_url,
        "INSPECT_DISPLAY": "plain",
        "HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE", "0"),
    }
    log = RunFolder.tool_log(work_dir, "inspect")
    tool_run = run_tool(argv, folder, log, "inspect gpqa_diamond", env=env, timeout=job.timeout)
    if tool_run.returncode != 0:
        hint = ""
        if cfg.dataset_path is None:
            hint = (
                f"inspect_evals downloads {GPQA_URL} at run time; offline, copy it to a local path and pass "
                "it as the gpqa-diamond dataset path"
            )
        raise SuiteFailed(fail_message(tool_run, "inspect eval", hint))
    log = newest_log(log_dir)
    summary = read_eval_log(log, python)
    return tool_run, log, summary, log_metrics(summary)
