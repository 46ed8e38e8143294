"""The deploy stage launches exactly the plan the runbook validated (every knob passes through)."""

from kimi_runbooks import deploy, runbook
from kimi_runbooks.paths import REPO_ROOT

ROOT = REPO_ROOT


def test_plan_config_wins_and_keeps_plan_config_semantics():
    config = {
        "platform": "mi350x",
        "tp": 8,
        "nnodes": 2,
        "sglang_version": "0.5.23",
        "reasoning_parser": None,
        "extra_args": ["--enable-metrics"],
    }
    plan = deploy.plan_from_params(platform="mi350x", tp=4, plan_config=config)
    assert plan.ok, [str(e) for e in plan.errors]  # the padded-heads rule of 0.5.23 allows tp 8
    assert plan.argv[plan.argv.index("--tp") + 1] == "8"
    assert "--reasoning-parser" not in plan.argv  # None disables it, as in PlanConfig
    assert "--enable-metrics" in plan.argv


def test_runbook_hands_the_whole_config_to_the_deploy_notebook(tmp_path):
    declared = runbook.declared_parameters(ROOT / "notebooks" / "deploy.ipynb")
    assert "plan_config" in declared
    params = runbook.split_params({"platform": "h200", "sglang_version": "0.5.23", "launcher": "emulator"})
    config, options = params
    values = runbook.stage_parameters("deploy", config, options, tmp_path, declared)
    assert values["plan_config"]["sglang_version"] == "0.5.23"
