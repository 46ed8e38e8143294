"""The deploy stage: run(folder, options) launches the run's one plan (saved in the folder), waits
until the server is ready, records what ran, and leaves the server up or stops it."""

from __future__ import annotations

from ..plan import load_plan
from ..rundir import RunFolder
from .handle import ServerHandle
from .stage_inputs import DeployOptions
from .start import finish, launch, notebook_options, require_valid


def run(folder: RunFolder, options: DeployOptions) -> ServerHandle:
    """Launch the plan saved in `folder` (plan_for_run or a runbook saved it) with options.launcher;
    handle.json and manifest.json are written when the server is ready. The server is then left
    running (options.keep_running) or stopped; the handle keeps what the server reported."""
    plan = load_plan(folder)
    require_valid(plan)  # stops here, before anything starts, when the plan has errors
    handle = launch(
        plan,
        options.launcher,
        folder,
        options=notebook_options(options.launcher, base_url=options.base_url, time_scale=options.time_scale),
        startup_timeout=options.startup_timeout,
    )
    print(f"run folder: {handle.run_dir}")
    print(finish(handle, options.keep_running))
    return handle
