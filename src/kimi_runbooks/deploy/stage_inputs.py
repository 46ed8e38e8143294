"""What the deploy stage starts from: its own options and the one plan of the run.

A runbook plans once and saves the plan in the run folder (plan/saved.py); the deploy stage loads
it and never plans again. Run on its own, the deploy notebook plans once here, at its edge, from
its PlanConfig knobs, saves that plan in its run folder and loads it back the same way.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ..plan import LaunchPlan, PlanConfig, load_plan, plan, save_plan
from ..rundir import RunFolder
from .errors import PlanError


class DeployOptions(BaseModel):
    """The deploy notebook's own parameters (the launch itself is the plan's). Each field's
    docstring is the comment beside it in the notebook's parameters cell."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    launcher: str = "emulator"
    """emulator | sglang-cpu | local | docker | external | multi-node | slurm"""
    base_url: str | None = None
    """Launcher external: the running server (scheme://host:port)."""
    startup_timeout: float | None = Field(default=None, gt=0)
    """Seconds; None: the launcher's (1800 s: loading ~600 GB takes many minutes; external: 10 s)."""
    time_scale: float = Field(default=1.0, gt=0, le=1000, allow_inf_nan=False)
    """Emulator only: multiplies every simulated duration."""
    keep_running: bool = False
    """True: leave the server up for later stages (`kimi-runbooks teardown RUN_DIR` stops it)."""


def _defaults() -> dict[str, Any]:
    """The knobs' values in the notebook's parameters cell (PlanConfig's defaults)."""
    from ..plan.config import EXAMPLE_PLATFORM

    return {
        name: EXAMPLE_PLATFORM if name == "platform" else field.get_default(call_default_factory=True)
        for name, field in PlanConfig.model_fields.items()
    }


def plan_for_run(folder: RunFolder | None, knobs: dict[str, Any]) -> tuple[RunFolder | None, LaunchPlan]:
    """(the run folder, the plan it launches): the plan saved there, or, with no folder or none
    saved in it, the plan of `knobs` made once now and saved first (in a new folder under outputs/
    without one). An invalid new plan is returned with no folder and nothing written (require_valid
    then refuses it). Knobs set beside a saved plan that differ from it are refused: the saved plan
    is what runs, and silently ignoring them would mislead."""
    if folder is not None and folder.plan.is_file():
        return folder, _saved_plan(folder, knobs)
    launch_plan = plan(PlanConfig(**knobs))
    if not launch_plan.ok:
        return None, launch_plan
    made = RunFolder.create(
        folder.path if folder else None, label=launch_plan.platform.id, secret_envs=[knobs.get("api_key_env")]
    )
    save_plan(made, launch_plan)
    return made, load_plan(made)  # the same path a runbook's deploy takes


def _saved_plan(folder: RunFolder, knobs: dict[str, Any]) -> LaunchPlan:
    launch_plan = load_plan(folder)
    saved, defaults = launch_plan.config.model_dump(), _defaults()
    clash = sorted(k for k, v in knobs.items() if v != defaults.get(k) and v != saved.get(k))
    if clash:
        given = ", ".join(f"{k}={knobs[k]!r} (saved: {saved.get(k)!r})" for k in clash)
        raise PlanError(
            f"{folder.plan} holds this run's plan, and the knobs {given} differ from it; the saved plan "
            "is what deploys. Fix: drop those knobs, or pass a new run_dir to plan with them."
        )
    return launch_plan
