"""Gather what each stage left in a run folder; a stage that left nothing is "not run", with why.

`collect(run_dir)` reads plan, manifest, handle, invoke.json, bench.jsonl, accuracy.jsonl and
stages.jsonl (file names from `RunFolder`, the stage table from `stages`); missing pieces stay
None and are shown as not run, never filled in. A stage whose notebook ran to the end takes the
status its results give (outcome.py): failed work is never shown as "ok".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import invoke
from ..origin import source_label
from ..rundir import RunFolder, read_jsonl
from ..speed import load_results
from ..speed.timescale import rescale
from ..stages import WORK_STAGES, availability, stage
from .outcome import Outcome, accuracy_outcome, invoke_outcome, speed_outcome, stage_outcomes


@dataclass
class StageState:
    """What one stage did in this run; `status` is ok, degraded, failed, interrupted, running,
    skipped, not run or not available."""

    name: str
    status: str
    detail: str = ""
    notebook: str | None = None
    duration_s: float | None = None


@dataclass
class RunData:
    run_dir: Path
    run_id: str
    params: dict[str, Any]
    plan: dict[str, Any] | None
    plan_errors: list[str]
    manifest: dict[str, Any] | None
    handle: dict[str, Any] | None
    invoke: list[Any] | None
    speed: pd.DataFrame | None
    accuracy: list[dict[str, Any]] | None
    stages: dict[str, StageState]
    problems: list[str] = field(default_factory=list)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    predicted: pd.DataFrame | None = None
    """Each ok scenario measured beside kimi_runbooks.perfmodel's prediction for the run's plan
    (perfmodel.beside_measured.predicted_beside_measured); None when the speed stage left nothing."""

    @property
    def platform(self) -> str | None:
        for source in (self.plan, self.manifest, self.handle, self.params):
            if source and source.get("platform"):
                return str(source["platform"])
        return None

    @property
    def model(self) -> str | None:
        """The model: the plan's; for an external server, the name it serves (the plan did not run)."""
        if self.external:  # the name it serves, else the name the run asked for
            config = (self.plan or {}).get("config") or {}
            for name in (
                (self.handle or {}).get("model"),
                (self.manifest or {}).get("model"),
                config.get("served_model_name"),
                self.params.get("served_model_name"),
            ):
                if name:
                    return str(name)
        for source in (self.plan, self.manifest, self.handle, self.params):
            if source and source.get("model"):
                return str(source["model"])
        return None

    @property
    def emulated(self) -> bool:
        flags = [
            (self.handle or {}).get("emulated"),
            (self.manifest or {}).get("emulated"),
            self.params.get("launcher") == "emulator",
        ]
        if self.invoke:
            flags.append(any(getattr(r, "emulated", False) for r in self.invoke))
        if self.speed is not None and "label" in self.speed.columns:
            flags.append(bool((self.speed["label"] == "emulated").any()))
        return any(bool(f) for f in flags)

    @property
    def external(self) -> bool:
        """The server was attached (launcher external), not launched: no plan of ours describes it."""
        launchers = (
            (self.manifest or {}).get("launcher"),
            (self.handle or {}).get("launcher"),
            self.params.get("launcher"),
        )
        return "external" in launchers

    @property
    def rehearsal(self) -> bool:
        """Real SGLang served a tiny random-weight model on the CPU (launcher sglang-cpu): every number is
        the real server's behaviour on a toy, neither EMULATED nor a hardware result."""
        return bool((self.handle or {}).get("rehearsal") or (self.manifest or {}).get("rehearsal"))

    @property
    def run_label(self) -> str:
        return source_label(self.emulated, self.run_id, rehearsal=self.rehearsal)

    @property
    def origin(self) -> str:
        """How tables head this run's numbers: EMULATED, REAL SGLANG, TINY MODEL, or measured (run <id>)."""
        if self.emulated or self.rehearsal:
            return source_label(self.emulated, upper=True, rehearsal=self.rehearsal)
        return source_label(False, self.run_id)


def _read_json(path: Path, problems: list[str]) -> Any:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name} could not be read ({exc}); its section is shown as not run")
        return None


def _stage_rows(folder: Path) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for row in read_jsonl(folder / RunFolder.STAGES):
        if row.get("stage"):
            latest[row["stage"]] = row
    return latest


def _stage_states(
    folder: RunFolder, params: dict[str, Any], outcomes: dict[str, Outcome] | None = None
) -> dict[str, StageState]:
    recorded = _stage_rows(folder.path)
    requested = params.get("stages")
    outcomes = outcomes or {}
    states = {}
    for name in WORK_STAGES:
        result_file = stage(name).result_file or ""
        row = recorded.get(name)
        derived = outcomes.get(name)
        if row:
            states[name] = StageState(
                name, row.get("status", "unknown"), row.get("detail") or "", row.get("notebook"), row.get("duration_s")
            )
            if states[name].status == "ok" and derived is not None and derived.status != "ok":
                states[name].status, states[name].detail = derived.status, derived.reason
        elif folder.file(result_file).exists():
            if derived is not None and derived.status != "ok":
                states[name] = StageState(name, derived.status, derived.reason)
            else:
                states[name] = StageState(name, "ok", "results found in the run folder")
        elif requested is not None and name not in requested:
            states[name] = StageState(name, "not run", "not requested (stages parameter)")
        else:
            states[name] = StageState(name, "not run", availability(name) or f"no {result_file} in the run folder")
    return states


def _load_invoke(folder: RunFolder, problems: list[str]) -> list[invoke.CheckResult] | None:
    if not folder.invoke.exists():
        return None
    try:
        return invoke.load(folder.path)
    except Exception as exc:  # noqa: BLE001 - a torn or older file must not hide the rest of the report
        problems.append(f"invoke.json could not be read ({type(exc).__name__}: {exc})")
        return None


def _load_speed(folder: RunFolder, devices: int | None, problems: list[str]) -> pd.DataFrame | None:
    if not folder.bench.exists():
        return None
    try:
        return load_results(folder.bench, devices=devices)
    except Exception as exc:  # noqa: BLE001 - the rest of the report is still worth reading
        problems.append(f"bench.jsonl could not be read ({type(exc).__name__}: {exc})")
        return None


def _rescaled(speed: pd.DataFrame | None, handle: dict[str, Any] | None, params: dict[str, Any]) -> pd.DataFrame | None:
    """An emulated run's speed rows on the latency model's clock (see speed.timescale)."""
    if speed is None:
        return None
    scale = (handle or {}).get("time_scale")
    if scale is None and params.get("launcher") == "emulator":
        scale = params.get("time_scale")
    return rescale(speed, scale)


def _devices(plan: dict[str, Any] | None) -> int | None:
    if plan and plan.get("devices_used"):
        return int(plan["devices_used"])
    config = (plan or {}).get("config") or {}
    tp = config.get("tp") or (plan or {}).get("tp")
    if not tp:
        argv = (plan or {}).get("argv") or []
        if "--tp" in argv:
            tp = argv[argv.index("--tp") + 1]
    try:
        return int(tp) * int(config.get("pp") or 1) if tp else None
    except (TypeError, ValueError):
        return None


def _predicted(
    speed: pd.DataFrame | None, plan: dict[str, Any] | None, external: bool, emulated: bool, problems: list[str]
) -> pd.DataFrame | None:
    """Measured beside predicted (speed on the model's clock already); a failure is a problem, not fatal."""
    if speed is None:
        return None
    from ..perfmodel.beside_measured import plan_of_run, predicted_beside_measured

    try:
        launch, reason = plan_of_run(plan, external=external)
        return predicted_beside_measured(speed, launch, emulated=emulated, reason=reason)
    except Exception as exc:  # noqa: BLE001 - the rest of the report is still worth reading
        problems.append(f"the speed prediction could not be made ({type(exc).__name__}: {exc})")
        return None


def stage_outcome(folder: RunFolder, name: str) -> Outcome | None:
    """What one work stage's own result file says of it (None: no result, or a stage whose status
    is its notebook's); what a runbook records as each stage ends, without reading the whole folder."""
    problems: list[str] = []  # a torn file leaves the stage's status to its notebook, as collect does
    if name == "invoke":
        return invoke_outcome(_load_invoke(folder, problems))
    if name == "speed":  # a scenario's status needs neither the device count nor the time scale
        return speed_outcome(_load_speed(folder, None, problems))
    if name == "accuracy":
        return accuracy_outcome(read_jsonl(folder.accuracy) if folder.accuracy.exists() else None)
    return None


def collect(folder: RunFolder) -> RunData:
    """Everything the stages left in `folder`; missing pieces stay None (shown as not run)."""
    if not folder.path.is_dir():
        raise FileNotFoundError(
            f"run folder {folder.path} does not exist. Fix: pass the folder a runbook "
            "or a stage notebook wrote (outputs/<run id>/)."
        )
    problems: list[str] = []
    params = _read_json(folder.runbook, problems) or {}
    manifest = _read_json(folder.manifest, problems)
    plan = _read_json(folder.plan, problems) or (manifest or {}).get("plan")
    plan_errors = _read_json(folder.plan_errors, problems) or []
    handle = _read_json(folder.handle, problems)
    external = "external" in ((manifest or {}).get("launcher"), (handle or {}).get("launcher"), params.get("launcher"))
    accuracy_rows = read_jsonl(folder.accuracy) if folder.accuracy.exists() else None
    run_id = str(
        params.get("run_id") or (manifest or {}).get("run_id") or (handle or {}).get("run_id") or folder.run_id
    )
    invoke_results = _load_invoke(folder, problems)
    devices = None if external else _devices(plan)  # external: the device count is unknown
    speed = _rescaled(_load_speed(folder, devices, problems), handle, params)
    outcomes = stage_outcomes(invoke_results, speed, accuracy_rows)
    data = RunData(
        run_dir=folder.path,
        run_id=run_id,
        params=params,
        plan=plan,
        plan_errors=[e if isinstance(e, str) else str(e.get("text", e)) for e in plan_errors],
        manifest=manifest,
        handle=handle,
        invoke=invoke_results,
        speed=speed,
        accuracy=accuracy_rows,
        stages=_stage_states(folder, params, outcomes),
        problems=problems,
        outcomes=outcomes,
    )
    if not data.rehearsal:  # a tiny model on a CPU says nothing of the plan's hardware: no prediction beside it
        data.predicted = _predicted(speed, plan, external, data.emulated, problems)
    return data
