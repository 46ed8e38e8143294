"""One platform's whole job, as a runbook notebook calls it: `run_runbook(params)`.

Order: check every parameter and the plan first (runbook.params; errors raise `PlanInvalid`
before anything starts), lock the run folder and check its fingerprint (runbook.fingerprint: resume
only the same configuration), stop orphans of earlier runs (deploy.registry), start the watchdog
(deploy.watchdog: tears the run down if this process dies), execute the stage notebooks in order
through papermill (each executed copy kept in run_dir/notebooks/, secrets redacted), always tear
the server down (deploy.teardown_run, in a finally), then render report.html. A stage whose
module or notebook is not in this checkout is recorded "not available", never faked. Each stage
appends a "running" line to run_dir/stages.jsonl when it starts and its status, derived from its
results (report/outcome.py), when it ends.
"""

from __future__ import annotations

import atexit
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import report
from ..catalog import ParamsError
from ..deploy import teardown_run
from ..deploy.registry import OWNER_ENV, owner_token
from ..deploy.teardown import stop_orphans
from ..deploy.watchdog import Watchdog
from ..execution.kernel_handoff import KernelHandoff
from ..execution.notebook import execute_notebook
from ..paths import NOTEBOOKS_DIR
from ..plan import LaunchPlan, PlanConfig, plan, save_plan
from ..plan.config import validation_text
from ..procs import RUN_TOKEN_ENV
from ..progress import ProgressRelay, StageBar, stage_bar
from ..rundir import RunFolder, RunFolderError, new_run_id, now_iso, outputs_base
from ..speed import shared_worker
from ..stages import availability, stage
from .fingerprint import RESULT_FILES, check_resume, fingerprint
from .params import (
    PlanInvalid,
    RunbookOptions,
    cells_over_recipe,
    check_before_start,
    declared_parameters,
    deployment_over_recipe,
    split_params,
    stage_parameters,
)


class RunbookFailed(RuntimeError):
    """A stage or check failed; the report was still written (its path is in the message)."""


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
        return report.summary_text(report.collect(RunFolder(self.run_dir)))


def build_plan(config: dict[str, Any], folder: RunFolder) -> LaunchPlan:
    """plan.plan for the runbook's knobs. An invalid plan raises PlanInvalid, its errors written
    to plan_errors.json unless the folder holds another run's results (left untouched)."""
    fresh = not any((folder.path / name).exists() for name in RESULT_FILES)
    try:
        launch_plan = plan(config)
    except (ValidationError, ParamsError) as exc:
        text = validation_text(exc) if isinstance(exc, ValidationError) else str(exc)
        if fresh:
            folder.save_json(folder.plan_errors, [text])
        raise PlanInvalid(f"invalid runbook parameters: {text}. Nothing was started.") from None
    if not launch_plan.ok:
        errors = [str(e) for e in launch_plan.errors]
        if fresh:
            save_plan(folder, launch_plan)
            folder.save_json(folder.plan_errors, errors)
        lines = "\n".join(f"  - {e}" for e in errors)
        raise PlanInvalid(
            f"the plan for {launch_plan.platform.id} is invalid ({len(errors)} error(s)); "
            f"no server was started. Errors{f' written to {folder.plan_errors}' if fresh else ''}:\n{lines}"
        )
    return launch_plan


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
    bar: StageBar | None = None,
    kernels: KernelHandoff | None = None,
) -> report.StageState:
    """Execute one stage notebook into run_dir/notebooks/; the result is appended to stages.jsonl.
    `kernels`: the notebook's kernel may have been started ahead there, and is stopped there."""
    notebook = stage(name).notebook
    source = notebooks_dir / notebook
    executed = folder.notebook(notebook)
    folder.mkdir(folder.notebooks)
    why = availability(name, notebooks_dir)
    start = time.monotonic()
    if why:
        state = report.StageState(name, "not available", why)
    else:
        params = stage_parameters(name, config, options, folder.path, declared_parameters(source))
        print(f"[runbook] {name}: started ({source.name}; {stage(name).does})", flush=True)
        folder.append_jsonl(folder.stages, {"stage": name, "status": "running", "started_at": now_iso()})
        km = kernels.take(source) if kernels is not None else None
        try:
            with ProgressRelay(folder, bar=bar):
                execute_notebook(
                    str(source),
                    str(executed),
                    parameters=params,
                    kernel_name=kernel_name,
                    cwd=str(folder.path),
                    progress_bar=False,
                    kernel_manager=km,
                )
            state = derived_state(name, folder, str(executed.relative_to(folder.path)))
        except Exception as exc:  # noqa: BLE001 - papermill raises PapermillExecutionError; any failure is recorded
            state = report.StageState(
                name,
                "failed",
                folder.redact(_error_text(exc)),
                str(executed.relative_to(folder.path)) if executed.exists() else None,
            )
        finally:
            if km is not None and kernels is not None:
                kernels.release(km)
            if executed.exists():
                report.redact_notebook(folder, executed)
    state.duration_s = round(time.monotonic() - start, 2)
    record_stage(folder, state)
    took = f" in {state.duration_s:.1f} s" if state.duration_s is not None else ""
    print(f"[runbook] {name}: {state.status}{took}" + (f" ({state.detail[:300]})" if state.detail else ""), flush=True)
    return state


def derived_state(name: str, folder: RunFolder, notebook: str) -> report.StageState:
    """A stage whose notebook ran to the end: the status its own results give (report/outcome.py);
    only that stage's result file is read, not the whole folder."""
    outcome = report.stage_outcome(folder, name)
    if outcome is None or outcome.status == "ok":
        return report.StageState(name, "ok", "", notebook)
    return report.StageState(name, outcome.status, outcome.reason, notebook)


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
    """While stages run, a SIGTERM to this process or interpreter exit still tears the server
    down: the deploy stage left it running for the later stages, so nothing else would. (When
    this process dies without running Python code at all, the watchdog does it.)"""

    def __init__(self, on_exit: Callable[[], None]) -> None:
        self._on_exit = on_exit
        self._installed = threading.current_thread() is threading.main_thread()
        atexit.register(self._on_exit)
        if self._installed:
            self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwinds through run_runbook's `finally`

    def release(self) -> None:
        atexit.unregister(self._on_exit)
        if self._installed:
            signal.signal(signal.SIGTERM, self._previous if self._previous is not None else signal.SIG_DFL)


@contextmanager
def _run_environment(token: str) -> Iterator[None]:
    """Every process the stages start inherits the run's token (found by the watchdog's sweep)
    and the runbook as owner of the server (registry)."""
    saved = {k: os.environ.get(k) for k in (RUN_TOKEN_ENV, OWNER_ENV)}
    os.environ[RUN_TOKEN_ENV] = token
    os.environ[OWNER_ENV] = owner_token()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_runbook(
    params: dict[str, Any], *, notebooks_dir: str | Path | None = None, kernel_name: str | None = None
) -> RunbookResult:
    """Validate everything, run the stages in order, always tear down, render the report."""
    config, options = split_params(dict(params))
    secret_env = config.get("api_key_env")
    if not config.get("platform"):
        raise PlanInvalid(
            "parameter 'platform' is missing. Fix: use a runbook from runbooks/ or pass "
            "-p platform <id> (see params/platforms/)."
        )
    nb_dir = Path(notebooks_dir) if notebooks_dir else NOTEBOOKS_DIR
    check_before_start(config, options, nb_dir)
    run_id = Path(options.run_dir).name if options.run_dir else new_run_id(config["platform"])
    try:
        folder = RunFolder.create(Path(options.run_dir or outputs_base() / run_id).resolve(), secret_envs=[secret_env])
    except RunFolderError as exc:
        raise PlanInvalid(f"{exc} Nothing was started.") from None
    token = uuid.uuid4().hex
    with folder.lock({"pid": os.getpid(), "started_at": now_iso(), "run_id": run_id}) as lock_fd:
        launch_plan = build_plan(config, folder)
        note = check_resume(folder, fingerprint(launch_plan, options), options.force)
        if note:
            print(f"[runbook] {note}", flush=True)
        orphans = stop_orphans().report()
        if orphans:
            print(f"[runbook] {orphans}", flush=True)
        folder.save_json(
            folder.runbook,
            {"run_id": run_id, "started_at": now_iso(), "run_token": token, **config, **options.model_dump()},
        )
        save_plan(folder, launch_plan)  # the run's one plan: the deploy stage loads it (plan/saved.py)
        print(f"[runbook] {launch_plan.platform.id}: plan valid; run folder {folder.path}", flush=True)
        states = _run_stages(config, options, folder, nb_dir, kernel_name, token, lock_fd)
        html = None
        if "report" in options.stages:
            html = report.render(folder, notebook=nb_dir / stage("report").notebook, kernel_name=kernel_name)
            print(f"[runbook] report: {html}", flush=True)
    result = RunbookResult(folder.path, run_id, launch_plan, states, html, report.verdict(report.collect(folder)))
    if options.fail_on_error and result.verdict.level == "FAIL":
        raise RunbookFailed(
            f"verdict FAIL for {folder.path}: "
            + "; ".join(result.verdict.reasons)[:2000]
            + (f". Report: {html}" if html else "")
        )
    return result


def _run_stages(
    config: dict[str, Any],
    options: RunbookOptions,
    folder: RunFolder,
    nb_dir: Path,
    kernel_name: str | None,
    token: str,
    lock_fd: int,
) -> dict[str, report.StageState]:
    """The work stages under the watchdog (which also keeps the folder locked until it is done)."""
    watchdog = Watchdog.start(folder, token, keep_fds=[lock_fd])
    folder.update_json(folder.LOCK_HOLDER, watchdog_pid=watchdog.pid)
    states: dict[str, report.StageState] = {}

    def finish() -> None:
        teardown(folder)
        watchdog.release()

    guard = _TeardownGuard(finish)  # SIGTERM / interpreter exit skip `finally`
    try:
        with _run_environment(token):
            bench = _start_bench_worker(folder, options)
            kernels = KernelHandoff(folder.path)
            try:
                work = [s for s in options.stages if s != "report"]
                bar = stage_bar(len(work))
                for done, name in enumerate(work):
                    if name != "deploy" and states.get("deploy") and states["deploy"].status != "ok":
                        states[name] = report.StageState(name, "skipped", f"deploy {states['deploy'].status}")
                        record_stage(folder, states[name])
                        continue
                    if bar is not None:
                        bar.stage(name, done)
                    for ahead in work[done : done + 2]:  # this stage's kernel, and the next one's meanwhile
                        if not availability(ahead, nb_dir):
                            kernels.prestart(nb_dir / stage(ahead).notebook, kernel_name)
                    states[name] = run_stage(name, config, options, folder, nb_dir, kernel_name, bar, kernels)
                    if bar is not None:
                        bar.stage(name, done + 1, states[name].status)
            finally:
                kernels.close()
                if bench is not None:
                    bench.stop()
    finally:
        guard.release()
        finish()
    return states


def _start_bench_worker(folder: RunFolder, options: RunbookOptions) -> shared_worker.SharedWorker | None:
    """When the speed stage will run bench_serving from the bench env, start its worker now: its
    ~7 s of imports then overlap the deploy and invoke stages (speed/shared_worker.py)."""
    speed_overrides = (options.stage_overrides or {}).get("speed") or {}
    if "speed" not in options.stages or speed_overrides.get("command_prefix") or speed_overrides.get("bench_python"):
        return None
    return shared_worker.start(folder, offline=bool(speed_overrides.get("offline", True)))


# --------------------------------------------------------------------------- notebook helpers


def plan_text(params: dict[str, Any]) -> str:
    """The plan of the runbook's knobs as text: command, memory, warnings and the verdict."""
    from ..plan import plan_text as text

    config = {k: v for k, v in params.items() if k in PlanConfig.model_fields}
    config = cells_over_recipe(config, params.get("platform"), params.get("model"))
    return text(deployment_over_recipe(config, params.get("platform")))  # as split_params plans it


def result_text(result: RunbookResult) -> str:
    return result.summary()
