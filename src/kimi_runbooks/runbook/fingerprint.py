"""What a run folder's results were produced with, so a resume never mixes configurations.

A rerun in the same run folder resumes: finished speed scenarios and accuracy suites are kept and
skipped. That is only right when the folder's results come from the same configuration. A folder
copied from an H200 run and reused with `-p platform b200` would otherwise report the H200 rows as
the B200 run. `fingerprint()` names the configuration (plan command, platform, model, launcher,
scenario definitions, accuracy suites, stage options); `check_resume()` lets a run continue only in
a folder with the same fingerprint, or sets the earlier results aside when the user says so.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ..catalog import load_catalog
from ..plan import LaunchPlan
from ..rundir import RunFolder, new_run_id
from .params import PlanInvalid, RunbookOptions

RESULT_FILES = (
    RunFolder.HANDLE,
    RunFolder.PROCESS,
    RunFolder.MANIFEST,
    RunFolder.INVOKE,
    RunFolder.BENCH,
    RunFolder.ACCURACY,
    RunFolder.STAGES,
)
"""Files whose presence means the folder holds a run's results."""
KEEP = {RunFolder.LOCK, RunFolder.LOCK_HOLDER, "superseded", ".secret-env-names"}
"""Left in place when earlier results are set aside (force=True)."""


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _scenarios(options: RunbookOptions) -> Any:
    if "speed" not in options.stages:
        return None
    chosen = options.stage_overrides.get("speed", {}).get("scenarios")
    catalog = load_catalog()
    if chosen:
        return [catalog.scenario(s).model_dump() for s in chosen]
    if options.scenario_set and options.scenario_set in catalog.scenario_sets:
        return [s.model_dump() for s in catalog.scenario_sets[options.scenario_set].scenarios]
    return options.scenario_set


def fingerprint(launch_plan: LaunchPlan, options: RunbookOptions) -> dict[str, Any]:
    """The parts of a configuration that change what a run measures (readable, plus digests)."""
    plan = launch_plan.as_dict()
    launch = {k: plan.get(k) for k in ("argv", "env", "nodes", "router", "docker_argv")}
    return {
        "platform": plan.get("platform"),
        "model": plan.get("model"),
        "deployment": plan.get("deployment"),
        "sglang_version": plan.get("sglang_version"),
        "launch_command": _digest(launch),
        "launcher": options.launcher,
        "base_url": options.base_url,
        "time_scale": options.time_scale if options.launcher == "emulator" else None,
        "scenario_set": options.scenario_set,
        "scenario_definitions": _digest(_scenarios(options)),
        "eval_suites": options.eval_suites,
        "stage_overrides": _digest(options.stage_overrides),
    }


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            if key in ("launch_command", "scenario_definitions", "stage_overrides"):
                out.append(f"{key} differs")
            else:
                out.append(f"{key} {old.get(key)!r} -> {new.get(key)!r}")
    return out


def check_resume(folder: RunFolder, parts: dict[str, Any], force: bool) -> str | None:
    """Continue in `folder` only with the same fingerprint; PlanInvalid otherwise, unless `force`
    (then the earlier results, after their server is stopped, move to superseded/<id>/). Returns
    what was done, for the run's log. Writes the fingerprint for the next run."""
    try:
        stored = folder.read_json(folder.FINGERPRINT) if (folder.path / folder.FINGERPRINT).exists() else None
        unreadable = ""
    except ValueError as exc:  # cut short: not this configuration's, as far as anyone can tell
        stored, unreadable = None, f"its fingerprint cannot be read ({exc})"
    has_results = any((folder.path / name).exists() for name in RESULT_FILES)
    note = None
    if has_results and stored != parts:
        why = (
            "; ".join(_differences(stored, parts))
            if isinstance(stored, dict)
            else unreadable or "it has no fingerprint (made by an older version or by hand)"
        )
        if not force:
            raise PlanInvalid(
                f"run folder {folder.path} holds results of another configuration ({why}). Resuming would "
                "report them as this run's. Nothing was started. Fix: pass a new run_dir, or force=True "
                "(papermill -p force True) to set the earlier results aside in superseded/ and start over."
            )
        from ..deploy import teardown_run

        stopped = teardown_run(folder)
        names = [p.name for p in folder.path.iterdir() if p.name not in KEEP]
        dest = folder.set_aside(names, new_run_id("superseded"))
        note = f"force=True: earlier results ({why}) moved to {dest}" + (
            f"; stopped what they left running: {'; '.join(stopped)}" if stopped else ""
        )
    folder.save_json(folder.FINGERPRINT, parts)
    return note
