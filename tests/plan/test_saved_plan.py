"""A plan saved in a run folder loads back as the same plan (plan/saved.py): a run is planned once."""

from __future__ import annotations

import json

import pytest

from kimi_runbooks.plan import PlanConfig, SavedPlanError, load_plan, plan, save_plan
from kimi_runbooks.plan.saved import SAVED, plan_from_record, plan_record
from kimi_runbooks.plan.shell import Word
from kimi_runbooks.rundir import RunFolder


def _configs(catalog) -> list[dict]:
    """Every platform's recipe, every published deployment, and knobs that make generated shell words."""
    configs = [{"platform": p} for p in sorted(catalog.platforms)]
    for dep_id, dep in sorted(catalog.deployments.items()):
        configs.append({"platform": dep.platform, "deployment": dep_id})
    configs += [
        {"platform": "h200", "api_key_env": "MY_KEY", "dp": 2, "extra_args": ["--x", "${HOME}"]},
        {"platform": "mi350x", "nnodes": 2},
        {"platform": "mi300x", "replicas": 2},
    ]
    return configs


def _words(launch) -> list[Word]:
    argvs = [launch.argv, *(n.argv for n in launch.nodes), launch.router.argv if launch.router else []]
    return [a for argv in argvs for a in argv if isinstance(a, Word)]


def test_every_plan_loads_back_whole(catalog, tmp_path) -> None:
    for config in _configs(catalog):
        launch = plan(PlanConfig(**config))
        loaded = plan_from_record(json.loads(json.dumps(plan_record(launch))))
        assert loaded == launch, config
        assert loaded.as_dict() == launch.as_dict(), config  # command, docker form, memory, rules, alternatives
        assert [w.parts for w in _words(loaded)] == [w.parts for w in _words(launch)], config


def test_generated_references_stay_expandable_and_a_users_stay_literal(tmp_path) -> None:
    launch = plan(PlanConfig(platform="h200", api_key_env="MY_KEY", extra_args=["--x", "${HOME}"]))
    folder = RunFolder.create(tmp_path / "run")
    save_plan(folder, launch)
    loaded = load_plan(folder)
    env = {"MY_KEY": "k", "HOME": "/home/u"}
    assert loaded.resolved_argv(env) == launch.resolved_argv(env)
    assert "k" in loaded.resolved_argv(env) and "${HOME}" in loaded.resolved_argv(env)


def test_plan_json_keeps_its_readable_view(tmp_path) -> None:
    launch = plan(PlanConfig(platform="h200"))
    folder = RunFolder.create(tmp_path / "run")
    save_plan(folder, launch)
    record = folder.read_json(folder.plan)
    assert {k: v for k, v in record.items() if k != SAVED} == json.loads(json.dumps(launch.as_dict()))


def test_a_plan_json_without_the_saved_plan_is_refused_with_the_fix(tmp_path) -> None:
    folder = RunFolder.create(tmp_path / "run")
    folder.save_json(folder.plan, plan(PlanConfig(platform="h200")).as_dict())  # an older version's plan.json
    with pytest.raises(SavedPlanError, match=r"no saved plan.*Fix: run the runbook again into a new run_dir"):
        load_plan(folder)
    with pytest.raises(SavedPlanError, match="nothing planned this run yet"):
        load_plan(RunFolder.create(tmp_path / "empty"))


def test_the_speed_stage_reads_the_capacity_of_the_saved_plan(tmp_path, monkeypatch) -> None:
    """The speed stage's KV capacity and device count are the saved plan's, not planned again."""
    from kimi_runbooks import speed
    from kimi_runbooks.speed import scenarios

    launch = plan(PlanConfig(platform="mi300x", replicas=2))
    folder = RunFolder.create(tmp_path / "run")
    save_plan(folder, launch)
    folder.save_json(folder.manifest, {"launcher": "emulator", "plan": launch.as_dict()})
    monkeypatch.setattr(scenarios, "plan", lambda *a, **k: pytest.fail("the speed stage planned again"))
    memory, devices = speed.platform_capacity("h200", run_dir=folder.path)
    assert memory == launch.memory and devices == launch.devices_used
