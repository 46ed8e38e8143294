"""One platform's whole job, as a runbook notebook calls it: `run_runbook(params)`.

Order: validate the plan first (plan.plan; errors are written to the run folder and raised as
`PlanInvalid` before anything starts), then execute the stage notebooks in order through papermill
(each executed copy kept in run_dir/notebooks/, secrets redacted), always tear the server down
(deploy.teardown_run, in a finally), then render report.html. A stage whose module or notebook is
not in this checkout is recorded "not available" and reported as not run, never faked.
Each stage appends one line to run_dir/stages.jsonl as it finishes.
"""

from __future__ import annotations

import atexit
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import report
from .deploy import teardown_run
from .notebook_run import LineRelay, execute_notebook
from .paths import NOTEBOOKS_DIR
from .plan import LaunchPlan, ParamsError, PlanConfig, plan
from .rundir import RunFolder, new_run_id, now_iso, outputs_base
from .stages import STAGE_NAMES, availability, stage

STAGE_ORDER = STAGE_NAMES
SHARED_PARAMS = ("run_dir", "api_key_env", "platform", "launcher", "time_scale", "scenario_set", "eval_suites")
"""What every later stage may receive. `model` and `base_url` go to deploy only: in the invoke and
speed notebooks `model` is the *served* name and `base_url` an external server, read from handle.json."""


class PlanInvalid(ValueError):
    """The plan failed validation; nothing was started. The message lists each rule and its fix."""


class RunbookFailed(RuntimeError):
    """A stage or check failed; the report was still written (its path is in the message)."""


class RunbookOptions(BaseModel):
    """The runbook's own parameters (everything that is not a knob of plan.PlanConfig)."""

    model_config = ConfigDict(extra="forbid")

    launcher: str = "emulator"
    base_url: str | None = None
    stages: list[str] = Field(default_factory=lambda: list(STAGE_ORDER))
    scenario_set: str | None = "smoke"
    eval_suites: list[str] | None = None
    run_dir: str | None = None
    time_scale: float = Field(default=1.0, gt=0)
    fail_on_error: bool = True
    stage_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Extra parameters for one stage notebook, e.g. {"invoke": {"timeout": 60}}."""

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in STAGE_ORDER]
        if unknown:
            raise ValueError(f"unknown stage(s) {unknown}; valid: {list(STAGE_ORDER)}")
        return [s for s in STAGE_ORDER if s in value]  # always run in the documented order


@dataclass
class RunbookResult:
    run_dir: Path
    run_id: str
    plan: LaunchPlan
    stages: dict[str, report.StageState]
    report_html: Path | None
    verdict: report.Verdict

    def summary(self) -> str:
        """The verdict, the command and the check counts (what the runbook's last cells print)."""
        return report.summary_text(report.collect(self.run_dir))


def split_params(params: dict[str, Any]) -> tuple[dict[str, Any], RunbookOptions]:
    """Runbook parameters -> (PlanConfig fields, RunbookOptions); unknown names fail clearly."""
    plan_fields = set(PlanConfig.model_fields)
    option_fields = set(RunbookOptions.model_fields)
    unknown = sorted(set(params) - plan_fields - option_fields)
    if unknown:
        raise PlanInvalid(
            f"unknown runbook parameter(s) {unknown}. Fix: use the knobs of "
            f"plan.PlanConfig ({', '.join(sorted(plan_fields))}) or the runbook options "
            f"({', '.join(sorted(option_fields))})."
        )
    config = {k: v for k, v in params.items() if k in plan_fields}
    try:
        options = RunbookOptions.model_validate({k: v for k, v in params.items() if k in option_fields})
    except ValidationError as exc:
        raise PlanInvalid(_validation_text(exc)) from None
    return config, options


def _validation_text(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())


def validate(config: dict[str, Any], folder: RunFolder) -> LaunchPlan:
    """plan.plan; its dict goes to plan.json. Errors go to plan_errors.json and raise PlanInvalid."""
    try:
        launch_plan = plan(config)
    except (ValidationError, ParamsError) as exc:
        text = _validation_text(exc) if isinstance(exc, ValidationError) else str(exc)
        folder.save_json(folder.plan_errors, [text])
        raise PlanInvalid(f"invalid runbook parameters: {text}. Nothing was started.") from None
    folder.save_json(folder.plan, launch_plan.as_dict())
    if not launch_plan.ok:
        errors = [str(e) for e in launch_plan.errors]
        folder.save_json(folder.plan_errors, errors)
        lines = "\n".join(f"  - {e}" for e in errors)
        raise PlanInvalid(
            f"the plan for {launch_plan.platform.id} is invalid ({len(errors)} error(s)); "
            f"no server was started. Errors written to {folder.plan_errors}:\n{lines}"
        )
    return launch_plan


def stage_parameters(
    stage: str, config: dict[str, Any], options: RunbookOptions, folder: Path, declared: set[str]
) -> dict[str, Any]:
    """What to inject into a stage notebook: only names its parameters cell declares."""
    values: dict[str, Any] = {
        "run_dir": str(folder),
        "api_key_env": config.get("api_key_env"),
        "platform": config.get("platform"),
        "launcher": options.launcher,
        "time_scale": options.time_scale,
        "scenario_set": options.scenario_set,
        "eval_suites": options.eval_suites,
    }
    if stage == "deploy":
        values.update(config)
        values.update(
            run_dir=str(folder),
            launcher=options.launcher,
            base_url=options.base_url,
            time_scale=options.time_scale,
            config=dict(config),
            plan_config=dict(config),
            keep_running=True,
        )  # later stages need the server; the runbook tears it down
        if options.launcher == "emulator":
            values.pop("port", None)  # the emulator takes a free port, so runs never collide
    allowed = set(values) if stage == "deploy" else set(SHARED_PARAMS)
    chosen = {k: v for k, v in values.items() if k in declared and k in allowed}
    extra = options.stage_overrides.get(stage, {})
    unknown = sorted(set(extra) - declared)
    if unknown:
        raise PlanInvalid(
            f"stage_overrides[{stage!r}] names {unknown}, which the {stage} notebook does "
            f"not declare. Fix: use its parameters: {sorted(declared)}."
        )
    return {**chosen, **extra}


def _declared(notebook: Path) -> set[str]:
    """Names assigned in the notebook's `parameters` cell (read with ast: papermill's own
    inspector drops lines whose comments contain quotes)."""
    import ast

    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            tree = ast.parse(cell.source)
            return {
                t.id
                for node in tree.body
                if isinstance(node, (ast.Assign, ast.AnnAssign))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(t, ast.Name)
            }
    return set()


def _error_text(exc: BaseException) -> str:
    ename, evalue = getattr(exc, "ename", None), getattr(exc, "evalue", None)
    text = f"{ename}: {evalue}" if ename else f"{type(exc).__name__}: {exc}"
    return text.strip()[:1500]


def run_stage(
    name: str,
    config: dict[str, Any],
    options: RunbookOptions,
    folder: RunFolder,
    notebooks_dir: Path,
    kernel_name: str | None = None,
) -> report.StageState:
    """Execute one stage notebook into run_dir/notebooks/; the result is appended to stages.jsonl."""
    notebook = stage(name).notebook
    source = notebooks_dir / notebook
    executed = folder.notebook(notebook)
    folder.mkdir(folder.notebooks)
    why = availability(name, notebooks_dir)
    start = time.monotonic()
    if why:
        state = report.StageState(name, "not available", why)
    else:
        params = stage_parameters(name, config, options, folder.path, _declared(source))
        print(f"[runbook] {name}: running {source.name}", flush=True)
        relay = LineRelay(
            f"[{name}] ", redact=folder.redact
        )  # what the stage prints (heartbeats too) shows here as it happens
        try:
            execute_notebook(
                str(source),
                str(executed),
                parameters=params,
                kernel_name=kernel_name,
                cwd=str(folder.path),
                progress_bar=False,
                stdout_file=relay,
            )
            state = report.StageState(name, "ok", "", str(executed.relative_to(folder.path)))
        except Exception as exc:  # noqa: BLE001 - papermill raises PapermillExecutionError; any failure is recorded
            state = report.StageState(
                name,
                "failed",
                folder.redact(_error_text(exc)),
                str(executed.relative_to(folder.path)) if executed.exists() else None,
            )
        finally:
            relay.flush()
            if executed.exists():
                report.redact_notebook(folder, executed)
    state.duration_s = round(time.monotonic() - start, 2)
    record_stage(folder, state)
    print(f"[runbook] {name}: {state.status}" + (f" ({state.detail[:300]})" if state.detail else ""), flush=True)
    return state


def record_stage(folder: RunFolder, state: report.StageState) -> None:
    folder.append_jsonl(
        folder.stages,
        {
            "stage": state.name,
            "status": state.status,
            "detail": state.detail,
            "notebook": state.notebook,
            "duration_s": state.duration_s,
            "finished_at": now_iso(),
        },
    )


def teardown(folder: RunFolder) -> list[str]:
    """deploy.teardown_run(run_dir), recorded in stages.jsonl."""
    try:
        done = teardown_run(folder)
    except Exception as exc:  # noqa: BLE001 - teardown must never hide the run's own result
        done = [f"teardown failed: {type(exc).__name__}: {exc}"]
    folder.append_jsonl(
        folder.stages,
        {"stage": "teardown", "status": "ok", "detail": "; ".join(done) or "nothing to stop", "finished_at": now_iso()},
    )
    return done


class _TeardownGuard:
    """While stages run, a SIGTERM (CI kill, papermill timeout) or interpreter exit still tears the
    server down: the deploy stage left it running for the later stages, so nothing else would."""

    def __init__(self, folder: RunFolder) -> None:
        self._folder = folder
        self._installed = threading.current_thread() is threading.main_thread()
        atexit.register(self._teardown)
        if self._installed:
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    def _teardown(self) -> None:
        teardown(self._folder)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwinds through run_runbook's `finally`

    def release(self) -> None:
        atexit.unregister(self._teardown)
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous if self._previous is not None else signal.SIG_DFL)


def run_runbook(
    params: dict[str, Any], *, notebooks_dir: str | Path | None = None, kernel_name: str | None = None
) -> RunbookResult:
    """Validate, run the stages in order, always tear down, render the report; see the module doc."""
    config, options = split_params(dict(params))
    secret_env = config.get("api_key_env")
    if not config.get("platform"):
        raise PlanInvalid(
            "parameter 'platform' is missing. Fix: use a runbook from runbooks/ or pass "
            "-p platform <id> (see params/platforms/)."
        )
    nb_dir = Path(notebooks_dir) if notebooks_dir else NOTEBOOKS_DIR
    run_id = Path(options.run_dir).name if options.run_dir else new_run_id(config["platform"])
    folder = RunFolder.create(Path(options.run_dir or outputs_base() / run_id).resolve(), secret_envs=[secret_env])
    folder.save_json(folder.runbook, {"run_id": run_id, "started_at": now_iso(), **config, **options.model_dump()})
    launch_plan = validate(config, folder)
    print(f"[runbook] {launch_plan.platform.id}: plan valid; run folder {folder.path}", flush=True)

    states: dict[str, report.StageState] = {}
    guard = _TeardownGuard(folder)  # SIGTERM / interpreter exit skip `finally`
    try:
        for name in [s for s in options.stages if s != "report"]:
            if name != "deploy" and states.get("deploy") and states["deploy"].status != "ok":
                states[name] = report.StageState(name, "skipped", f"deploy {states['deploy'].status}")
                record_stage(folder, states[name])
                continue
            states[name] = run_stage(name, config, options, folder, nb_dir, kernel_name)
    finally:
        guard.release()
        teardown(folder)

    html = None
    if "report" in options.stages:
        html = report.render(
            folder.path, notebook=nb_dir / stage("report").notebook, secret_env=secret_env, kernel_name=kernel_name
        )
        print(f"[runbook] report: {html}", flush=True)
    result = RunbookResult(folder.path, run_id, launch_plan, states, html, report.verdict(report.collect(folder.path)))
    if options.fail_on_error and result.verdict.level == "FAIL":
        raise RunbookFailed(
            f"verdict FAIL for {folder.path}: "
            + "; ".join(result.verdict.reasons)[:2000]
            + (f". Report: {html}" if html else "")
        )
    return result


# --------------------------------------------------------------------------- notebook helpers

PARAMETER_NAMES = (*PlanConfig.model_fields, *RunbookOptions.model_fields)


def collect_parameters(namespace: dict[str, Any]) -> dict[str, Any]:
    """The runbook parameters out of a notebook's globals (after papermill's injected cell)."""
    return {name: namespace[name] for name in PARAMETER_NAMES if name in namespace}


def plan_text(params: dict[str, Any]) -> str:
    """The plan of the runbook's knobs as text: command, memory, warnings and the verdict."""
    from .plan import plan_text as text

    config = {k: v for k, v in params.items() if k in PlanConfig.model_fields}
    return text(config)


def result_text(result: RunbookResult) -> str:
    return result.summary()
