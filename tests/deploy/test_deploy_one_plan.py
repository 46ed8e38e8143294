"""The deploy stage launches the one plan of the run: the plan saved in the run folder, never planned
again (deploy/stage_inputs.py); run on its own, it plans once and saves the plan first."""

from __future__ import annotations

import pytest

from kimi_runbooks import deploy, runbook
from kimi_runbooks.deploy import stage_inputs
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import EXAMPLE_PLATFORM, PlanConfig, load_plan, plan, save_plan
from kimi_runbooks.rundir import RunFolder

DEPLOY_NOTEBOOK = REPO_ROOT / "notebooks" / "deploy.ipynb"


def _cell_knobs(**given) -> dict:
    """The deploy notebook's knobs: its parameters cell's values (PlanConfig's defaults), then `given`."""
    defaults = {name: f.get_default(call_default_factory=True) for name, f in PlanConfig.model_fields.items()}
    return {**defaults, "platform": EXAMPLE_PLATFORM, **given}


@pytest.fixture
def no_planning(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the deploy stage planned again")

    monkeypatch.setattr(stage_inputs, "plan", refuse)


def test_the_deploy_stage_loads_the_saved_plan_and_plans_nothing(tmp_path, no_planning):
    folder = RunFolder.create(tmp_path / "run")
    saved = plan(PlanConfig(platform="mi350x", sglang_version="0.5.23", tp=8, reasoning_parser=None))
    save_plan(folder, saved)
    got_folder, launched = deploy.plan_for_run(RunFolder.of(str(folder.path)), _cell_knobs(platform="mi350x"))
    assert got_folder is not None and got_folder.path == folder.path
    assert launched == saved and launched.argv[launched.argv.index("--tp") + 1] == "8"
    assert "--reasoning-parser" not in launched.argv


def test_a_changed_saved_plan_is_what_deploys(tmp_path, no_planning):
    """A saved plan edited by hand (no knob could produce this argv) is launched as saved."""
    folder = RunFolder.create(tmp_path / "run")
    save_plan(folder, plan(PlanConfig(platform="h200")))
    record = folder.read_json(folder.plan)
    record["saved"]["plan"]["argv"].append("--the-saved-plan-wins")
    folder.save_json(folder.plan, record)
    _, launched = deploy.plan_for_run(folder, _cell_knobs())
    assert launched.argv[-1] == "--the-saved-plan-wins"


def test_knobs_beside_a_saved_plan_that_differ_from_it_are_refused(tmp_path, no_planning):
    folder = RunFolder.create(tmp_path / "run")
    save_plan(folder, plan(PlanConfig(platform="h200")))
    with pytest.raises(deploy.PlanError, match=r"knobs tp=4 \(saved: 8\) differ.*Fix: drop those knobs"):
        deploy.plan_for_run(folder, _cell_knobs(platform="h200", tp=4))


def test_standalone_plans_once_and_saves_the_plan_before_launching(tmp_path):
    _, launched = deploy.plan_for_run(RunFolder(tmp_path / "run"), _cell_knobs(platform="mi350x", tp=4))
    assert launched == load_plan(RunFolder(tmp_path / "run"))
    assert launched.argv[launched.argv.index("--tp") + 1] == "4"


def test_standalone_invalid_plan_writes_nothing(tmp_path):
    folder, launched = deploy.plan_for_run(RunFolder(tmp_path / "run"), _cell_knobs(platform="mi350x", tp=8))
    assert folder is None and not launched.ok and not (tmp_path / "run").exists()
    with pytest.raises(deploy.PlanError, match="nothing was started"):
        deploy.require_valid(launched)


def test_the_runbook_hands_the_deploy_notebook_no_knobs(tmp_path):
    declared = runbook.declared_parameters(DEPLOY_NOTEBOOK)
    config, options = runbook.split_params(
        {"platform": "h200", "sglang_version": "0.5.23", "tp": 8, "launcher": "emulator", "time_scale": 0.1}
    )
    values = runbook.stage_parameters("deploy", config, options, tmp_path, declared)
    assert values == {
        "run_dir": str(tmp_path),
        "platform": "h200",
        "api_key_env": None,
        "launcher": "emulator",
        "time_scale": 0.1,
        "base_url": None,
        "keep_running": True,
    }
