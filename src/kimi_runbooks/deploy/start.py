"""Turn a validated plan into a running server, say why it did not start, and always clean up.

`launch(plan, launcher=...)` returns a `ServerHandle` (a context manager). The launcher (see
launchers/) decides where and how the server runs; this module does the same steps for every
launcher: refuse an invalid plan, check the API key variable, run the launcher's preflight
checks, start, register the server for teardown at exit, wait until ready and record the
manifest and handle.json. On any failure the server is stopped before the error is raised.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from ..plan import LaunchPlan
from ..procs import RUN_TOKEN_ENV
from ..progress import report_progress
from ..rundir import RunFolder, now_iso
from ..target.locate import write_handle
from . import live, registry
from . import manifest as manifest_mod
from .errors import DeployError, PlanError, PreflightError
from .handle import ServerHandle
from .launchers import LaunchContext, get_launcher, launcher_class
from .preflight import PreflightReport
from .teardown import stop_orphans, teardown_run


@dataclass(frozen=True)
class LaunchOptions:
    """How `launch` starts a plan: one typed declaration instead of a keyword list."""

    options: Mapping[str, Any] | BaseModel | None = None
    """The launcher's own settings (emulator: time_scale, startup_seconds, fault; external: base_url;
    slurm: sbatch_options, emulate); names the launcher does not know are refused."""
    port: int | None = None
    """None: the plan's port (the emulator takes a free one)."""
    startup_timeout: float | None = None
    """None: the launcher's default (30 min for a server it starts, seconds for an external one,
    which is up already or not at all)."""
    preflight: bool = True
    wait: bool | None = None
    """None: wait when the launcher starts the server itself (not for multi-node scripts started by hand)."""
    progress: bool = True
    environ: dict[str, str] | None = None
    """The environment the server starts with (None: this process's)."""

    @classmethod
    def of(cls, given: LaunchOptions | None = None, settings: Mapping[str, Any] | None = None) -> LaunchOptions:
        """`given` with `settings` applied; an unknown name is refused with the valid ones."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(settings or {}) - set(names))
        if unknown:
            raise TypeError(
                f"unknown launch setting(s) {', '.join(unknown)}. Fix: one of {', '.join(names)} "
                "(the launcher's own settings go in options={...})"
            )
        return dataclasses.replace(given or cls(), **dict(settings or {}))


def launch(
    plan: LaunchPlan,
    launcher: str = "emulator",
    folder: RunFolder | None = None,
    launch_options: LaunchOptions | None = None,
    **settings: Any,
) -> ServerHandle:
    """Launch `plan` with `launcher` and wait until it is ready; see the module docstring.

    `launch_options` (or the same names as keywords: `progress=False, options={"time_scale": 0.05}`)
    say how, each documented on LaunchOptions. No folder: a new one under outputs/, named after the platform.
    """
    o = LaunchOptions.of(launch_options, settings)
    driver = get_launcher(launcher, o.options)
    require_valid(plan)
    env = dict(os.environ if o.environ is None else o.environ)
    secret_env = plan.config.api_key_env
    if secret_env and not env.get(secret_env):
        raise DeployError(
            f"api_key_env={secret_env} but ${secret_env} is not set. Fix: export {secret_env}=<key> before launching."
        )
    folder = folder if folder is not None else RunFolder.create(label=plan.platform.id)
    folder.add_secret_env(secret_env)
    _stop_leftovers(folder, o.progress)
    warnings = [str(w) for w in plan.warnings]
    for w in warnings:
        print(f"WARNING: {w}")
    host, bound_port = driver.bind(plan, o.port)
    handle = ServerHandle(
        launcher=launcher,
        folder=folder,
        base_url=driver.url(plan, host, bound_port),
        platform=plan.platform.id,
        model=plan.served_name,
        api_key_env=secret_env,
        emulated=driver.emulated,
        owns=driver.owns_server,
        driver=driver,
        started_at=now_iso(),
        warnings=warnings,
        plan=plan,
        log_path=folder.server_log,
    )
    ctx = LaunchContext(plan=plan, folder=folder, environ=env, host=host, port=bound_port, progress=o.progress)
    if o.preflight:
        handle.preflight = driver.preflight(ctx)
        if handle.preflight.checks:
            folder.save_json(folder.preflight, handle.preflight.as_rows())
            if o.progress:
                print(handle.preflight)
            for check in handle.preflight.checks:  # what a runbook shows while the stage runs
                if check.status != "pass" or check.name == "url":
                    text = f"preflight {check.name}: {check.status}: {check.detail}"
                    text += f" Fix: {check.fix}" if check.fix else ""
                    report_progress(folder, "deploy", text, milestone=True)
        if not handle.preflight.ok:
            raise PreflightError(handle.preflight)
    try:
        driver.start(ctx, handle)
        if handle.owns:
            live.register(handle)
        if handle.owns or handle.pid or handle.slurm_job_id:
            folder.save_json(folder.process, {**handle.process_record(), "previous": _previous_records(folder)})
            registry.record(handle, run_token=env.get(RUN_TOKEN_ENV))
    except BaseException:
        handle.stop()
        raise
    if (o.wait if o.wait is not None else driver.waits_by_default) and driver.ready_url_known(handle):
        try:
            timeout = driver.default_startup_timeout if o.startup_timeout is None else o.startup_timeout
            driver.wait_ready(handle, timeout=timeout, progress=o.progress)
            record(handle, environ=env)
        except BaseException:
            handle.stop()
            raise
    return handle


def _stop_leftovers(folder: RunFolder, progress: bool) -> None:
    """Before a new server: stop orphans of earlier runs (their owner is gone) and any server an
    earlier launch left running in THIS folder, whose process.json is about to be replaced."""
    orphans = stop_orphans().report()
    if orphans and progress:
        print(orphans, flush=True)
    try:
        old = folder.read_json(folder.process) if folder.process.exists() else None
    except ValueError:
        old = {}  # cut short: whatever it named is stopped through the registry and reported
    if isinstance(old, dict) and not old.get("stopped_at"):
        done = teardown_run(folder, folder_token=False)
        if done and progress:
            print(f"what an earlier launch left in {folder.path}: {'; '.join(done)}", flush=True)


def _previous_records(folder: RunFolder) -> list[dict[str, Any]]:
    """Earlier servers of this folder (each with its stopped_at), so a rerun forgets none (an
    unreadable process.json has none to give: _stop_leftovers reported it)."""
    try:
        old = folder.read_json(folder.process) if folder.process.exists() else None
    except ValueError:
        return []
    if not isinstance(old, dict):
        return []
    earlier = old.pop("previous", None) or []
    return [*earlier, old][-10:]


def record(handle: ServerHandle, environ: dict[str, str] | None = None) -> None:
    """Write the manifest and the handle file (both redacted) into the run folder."""
    manifest = manifest_mod.build_manifest(handle, environ)
    if handle.rehearsal:
        manifest["rehearsal"] = handle.rehearsal  # real SGLang, tiny model: the label every number carries
    handle.folder.save_json(handle.folder.manifest, manifest)
    write_handle(handle.folder, handle.to_run_handle())


def run_preflight(
    plan: LaunchPlan,
    launcher: str,
    *,
    host: str | None = None,
    port: int | None = None,
    environ: dict[str, str] | None = None,
) -> PreflightReport:
    """The preflight checks `launcher` runs for `plan` (the emulator needs only a free port)."""
    driver = get_launcher(launcher)
    ctx = LaunchContext(
        plan=plan,
        folder=RunFolder("."),
        environ=dict(os.environ if environ is None else environ),
        host=host or plan.serve_host,
        port=port or plan.serve_port,
    )
    return driver.preflight(ctx)


# --------------------------------------------------------------------------- notebook helpers


def notebook_options(launcher: str, *, base_url: str | None = None, time_scale: float | None = None) -> dict[str, Any]:
    """The deploy notebook's launcher-specific parameters, passed only to a launcher that takes them
    (base_url to external, time_scale to the emulator and an emulated Slurm run)."""
    fields = launcher_class(launcher).Options.model_fields
    given = {"base_url": base_url, "time_scale": time_scale}
    return {k: v for k, v in given.items() if k in fields and v is not None}


def require_valid(plan: LaunchPlan) -> None:
    """Raise PlanError (nothing started) when the plan has validation errors."""
    if not plan.ok:
        lines = "\n".join(f"  - {e}" for e in plan.errors)
        raise PlanError(f"the plan has {len(plan.errors)} error(s); nothing was started:\n{lines}")


def finish(handle: ServerHandle, keep_running: bool) -> str:
    """End of the deploy stage: leave the server up for later stages, or stop it now."""
    if keep_running and handle.owns:
        handle.detach()
        if not os.environ.get(registry.OWNER_ENV):  # no runbook around: left running on purpose
            registry.detach(handle.run_dir)
        return (
            f"server left running at {handle.base_url} (pid group {handle.pgid or '-'}, "
            f"container {handle.container or '-'}, slurm job {handle.slurm_job_id or '-'}); "
            f"stop it with: kimi-runbooks teardown {shlex.quote(str(handle.run_dir))}"
        )
    handle.stop()
    return "server stopped" if handle.owns else "external server: left as it was"
