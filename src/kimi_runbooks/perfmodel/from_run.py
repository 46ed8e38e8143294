"""A measured run as a reference the performance model is fitted and validated on.

The model's bands are as narrow as the pages behind a family and stack (issue 43: AMD has three public
SGLang pages, too few for a 2.5x band). A user who ran the speed stage on real hardware holds exactly
what is missing: `reference_from_run` turns that run folder into a `kind: table` reference under
params/references (plan, launch flags, software stack, and per scenario the measured lengths, median TTFT,
median TPOT and output throughput), which `calibrate` then fits and leaves out like any public page.

Refused, each with the rule and the fix: an emulated run or a CPU rehearsal (their figures are our own
model or a tiny model: fitting them would fit the model to itself); a run with no finished scenario; an
id that is not a plain slug or already names a reference. Scenarios the table format cannot express
(a request rate instead of a concurrency, a dataset that is not random lengths) are left out and listed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ..rundir import RunFolder, read_jsonl, write_redacted
from ..rundir.attempts import latest_by_repeat
from ._deps import LaunchPlan, SavedPlanError, flag_value, plan_from_record
from .stack import plan_stack

ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{2,63}")
LAUNCH_KEYS = ("tp", "dp", "ep", "enable_dp_attention", "kv_cache_dtype", "mem_fraction_static", "context_length")
TABLE_METRICS = ("median_ttft_ms", "median_tpot_ms", "output_throughput")
RANDOM_DATASETS = ("random", "random-ids")
RELEASE = re.compile(r"\d+\.\d+\.\d+(?:\.post\d+|rc\d+)?")
"""A release number as /server_info reports it; anything else (an emulator's "0.5.23-emulated", a dev
build) leaves the plan's --sglang-version in place."""


class ReferenceFromRunError(ValueError):
    """The run cannot become a reference; the message names the rule and the fix."""


@dataclass
class RunReference:
    """The reference written (as a mapping) and the scenarios left out, each with why."""

    data: dict[str, Any]
    left_out: list[str] = field(default_factory=list)


def _table_row(row: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(the table row, "") or (None, why the scenario is left out)."""
    name = str(row.get("scenario"))
    if row.get("status") != "ok":
        return None, f"{name}: status {row.get('status')!r}, not ok"
    argv = [str(a) for a in row.get("argv") or []]
    dataset = flag_value(argv, "--dataset-name")
    if dataset not in RANDOM_DATASETS:
        return None, f"{name}: dataset {dataset!r}: the table format holds random-length runs only"
    rate = flag_value(argv, "--request-rate")
    if rate not in (None, "inf"):
        return None, f"{name}: request rate {rate}: the table format holds concurrency-limited runs only"
    m = row.get("metrics") or {}
    completed = int(m.get("completed") or 0)
    metrics = {
        k: round(float(m[k]), 2) for k in TABLE_METRICS if isinstance(m.get(k), (int, float)) and math.isfinite(m[k])
    }
    if completed < 1 or len(metrics) < len(TABLE_METRICS):
        return None, f"{name}: no completed requests or a missing median TTFT / TPOT / output throughput"
    ratio = flag_value(argv, "--random-range-ratio")
    repeat = {"repeat": int(row["repeat"])} if int(row.get("repeats") or 1) > 1 else {}
    return {
        "scenario": name,
        **repeat,
        "input_len": max(round(float(m.get("total_input_tokens") or 0) / completed), 1),
        "output_len": max(round(float(m.get("total_output_tokens") or 0) / completed), 1),
        "concurrency": int(row.get("max_concurrency") or m.get("max_concurrency") or 1),
        "num_prompts": completed,
        "range_ratio": float(ratio) if ratio is not None else 0.0,
        "metrics": metrics,
    }, ""


def reference_from_run(folder: RunFolder, ref_id: str, source: str, hardware: str = "") -> RunReference:
    """The `kind: table` reference a measured run folder makes (nothing written: `write_reference`)."""
    if not ID_PATTERN.fullmatch(ref_id):
        raise ReferenceFromRunError(
            f"reference id {ref_id!r}: rule reference-id-is-a-slug (3-64 of a-z, 0-9 and '-', starting with a "
            "letter or digit). Fix: e.g. --id my-lab-k26-mi355x-2026-12"
        )
    if not source.strip():
        raise ReferenceFromRunError(
            "rule reference-has-a-source: say where the figures can be checked. Fix: --source 'URL of the "
            "published run' (or, for a private measurement, who ran it, where and when)"
        )
    if not folder.path.is_dir():
        raise ReferenceFromRunError(
            f"run_dir {folder.path} does not exist: rule run-dir-exists. Fix: pass the folder a runbook wrote "
            "(outputs/<run id>)"
        )
    manifest = (folder.read_json(folder.manifest) if folder.manifest.is_file() else None) or {}
    rows = read_jsonl(folder.file(RunFolder.BENCH)) if folder.file(RunFolder.BENCH).is_file() else []
    if manifest.get("emulated") or any(r.get("emulated") for r in rows):
        raise ReferenceFromRunError(
            f"{folder.path}: rule measured-runs-only: this run is EMULATED; the emulator's figures come from our "
            "own model, and fitting them would fit the model to itself. Fix: run the speed stage against the "
            "real server on the hardware (launcher docker, local, slurm or external)"
        )
    if manifest.get("launcher") == "sglang-cpu" or any(r.get("rehearsal") for r in rows):
        raise ReferenceFromRunError(
            f"{folder.path}: rule measured-runs-only: this run is a CPU rehearsal (real SGLang, tiny model), not "
            "the model on its hardware. Fix: run the speed stage on the hardware the plan names"
        )
    if not folder.plan.is_file():
        raise ReferenceFromRunError(
            f"{folder.plan} does not exist: rule run-has-a-plan. Fix: pass the run_dir a runbook or the deploy "
            "notebook wrote (it saves plan.json)"
        )
    try:
        launch: LaunchPlan = plan_from_record(folder.read_json(folder.plan), str(folder.plan))
    except SavedPlanError as exc:
        raise ReferenceFromRunError(f"rule run-has-a-plan: {exc}") from None
    cfg = launch.config
    table, left_out = [], []
    for row in latest_by_repeat(r for r in rows if r.get("scenario") is not None).values():
        made, why = _table_row(row)
        if made is None:
            left_out.append(why)
        else:
            table.append(made)
    if not table:
        raise ReferenceFromRunError(
            f"{folder.path}: rule run-has-finished-scenarios: no scenario finished ok with random lengths and a "
            f"concurrency ({len(left_out)} left out: {'; '.join(left_out) or 'bench.jsonl is empty'}). Fix: run the "
            "speed stage (a `random` scenario set) to the end first"
        )
    served = str(manifest.get("sglang_version") or "")
    version = served if RELEASE.fullmatch(served) else cfg.sglang_version  # what /server_info said ran
    stack = replace(plan_stack(launch), sglang_version=version).as_dict()
    if stack.get("speculative"):
        stack["speculative"] = {k: v for k, v in stack["speculative"].items() if v is not None}
    data = {
        "id": ref_id,
        "kind": "table",
        "platform": launch.platform.id,
        "model": launch.model.id,
        "sglang_version": version,
        "hardware": hardware or f"{launch.devices_used} x {launch.platform.id}",
        "docker_image": launch.docker_image,
        "published": str(manifest.get("started_at") or "")[:10] or None,
        "source": source,
        "measured_run": {
            "run_id": folder.run_id,
            "project_commit": manifest.get("project_commit"),
            "launcher": manifest.get("launcher"),
        },
        "launch_command": launch.command,
        "launch": {
            **{k: getattr(cfg, k) for k in LAUNCH_KEYS if getattr(cfg, k, None) is not None},
            **({"env": dict(launch.launch_env)} if launch.launch_env else {}),
        },
        "stack": stack,
        "rows": table,
    }
    return RunReference(data, left_out)


def write_reference(
    ref: RunReference, params_dir: Path, secret_envs: list[str | None] | None = None, force: bool = False
) -> Path:
    """params/references/speed-<id>.yaml, redacted like every run-folder write; an existing file is
    refused unless `force` (a reference is a record, not a cache)."""
    path = Path(params_dir) / "references" / f"speed-{ref.data['id']}.yaml"
    if path.exists() and not force:
        raise ReferenceFromRunError(
            f"{path} exists: rule reference-ids-are-unique. Fix: choose another --id, or --force to replace it"
        )
    header = (
        "# A measured run turned into a reference (python -m kimi_runbooks.perfmodel reference-from-run):\n"
        "# figures from the run's bench.jsonl (the latest attempt of each scenario and repeat: a repeated scenario\n"
        "# is a row per repeat, one run in the fit), lengths the measured means.\n"
    )
    text = header + yaml.safe_dump(ref.data, sort_keys=False, allow_unicode=True, width=120)
    return write_redacted(path, text, secret_envs or [])
