"""The ten runbooks: in step with params/, validation first, every platform end to end on the
emulator, no key anywhere in a run, and the nbval goldens (passing, and failing on a changed flag)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill as pm
import pytest

from kimi_runbooks import report, runbook
from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import PlanConfig, plan
from kimi_runbooks.report import html as report_html
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.stages import availability
from tests.support import run_notebook

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

ROOT = REPO_ROOT
RUNBOOKS = ROOT / "runbooks"
NBVAL = ROOT / "tests" / "nbval"
PLATFORMS = sorted(load_catalog().platforms)
IN_CI = os.environ.get("CI") == "true"


def _stages_present() -> bool:
    return all(availability(s) is None for s in ("deploy", "invoke", "speed"))


def _require_stages() -> None:
    if not _stages_present():
        if IN_CI:
            pytest.fail("deploy/invoke/speed stage notebooks or modules are missing, and CI=true")
        pytest.skip("deploy/invoke/speed stages not in this checkout yet")


# --------------------------------------------------------------------------- structure


def test_every_notebook_is_in_step_with_its_generator_and_has_no_outputs():
    """scripts/make_notebooks.py --check: every notebook (stages, command generator, report,
    runbooks) equals what the generator writes from notebook_cells/ and params/."""
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_notebooks.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.stem for p in RUNBOOKS.glob("*.ipynb")) == PLATFORMS
    for path in [*RUNBOOKS.glob("*.ipynb"), *(ROOT / "notebooks").glob("*.ipynb")]:
        nb = nbformat.read(str(path), as_version=4)
        assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path.name} has outputs"


def test_drift_check_fails_on_a_changed_notebook(tmp_path):
    """The check itself: a notebook edited by hand is reported, and the script exits 1."""
    import shutil

    copy = tmp_path / "repo"
    for part in ("scripts", "notebooks", "runbooks", "params"):
        shutil.copytree(ROOT / part, copy / part)
    nb = copy / "notebooks" / "deploy.ipynb"
    nb.write_text(nb.read_text().replace("keep_running", "keep_running_edited", 1))
    proc = subprocess.run(
        [sys.executable, str(copy / "scripts" / "make_notebooks.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "KIMI_RUNBOOKS_PARAMS": str(copy / "params")},
    )
    assert proc.returncode == 1 and "notebooks/deploy.ipynb" in proc.stderr


@pytest.mark.parametrize("platform", PLATFORMS)
def test_parameters_cell_names_every_plan_knob_with_the_recipe_values(platform):
    nb = nbformat.read(str(RUNBOOKS / f"{platform}.ipynb"), as_version=4)
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert first_code.metadata.get("tags") == ["parameters"]
    namespace: dict = {}
    exec(first_code.source, namespace)  # noqa: S102 - our own generated parameters cell
    params = runbook.collect_parameters(namespace)
    assert set(PlanConfig.model_fields) <= set(params)
    assert {
        "launcher",
        "base_url",
        "api_key_env",
        "stages",
        "scenario_set",
        "eval_suites",
        "run_dir",
        "time_scale",
    } <= set(params)
    recipe = load_catalog().platform(platform).recipe
    # with a deployment, each role's parallelism and memory are the deployment's: the recipe's would override every role
    assert (params["tp"], params["model"], params["mem_fraction_static"]) == (
        None if recipe.deployment else recipe.tp,
        recipe.model,
        None if recipe.deployment else recipe.mem_fraction_static,
    )
    assert params["launcher"] == "emulator"
    config, options = runbook.split_params(params)
    assert PlanConfig.model_validate(config).platform == platform
    assert options.stages == list(runbook.STAGE_ORDER)


def test_a_model_with_its_own_snippet_recipe_is_not_given_the_platforms_values():
    # the MI300X parameters cell holds the K2.6 recipe (mem_fraction_static 0.8); the K2.5 page sets none
    params = {"platform": "mi300x", "model": "kimi-k2.5", "tp": 4, "mem_fraction_static": 0.8}
    config, _ = runbook.split_params(params)
    assert config["mem_fraction_static"] is None and config["tp"] is None
    assert "--mem-fraction-static" not in plan(config).argv
    mine = {**params, "mem_fraction_static": 0.75}  # a value of the user's own still applies
    assert runbook.split_params(mine)[0]["mem_fraction_static"] == 0.75


def test_unknown_parameter_is_a_clear_error():
    with pytest.raises(runbook.PlanInvalid, match="unknown runbook parameter"):
        runbook.split_params({"platform": "h200", "tensor_parallel": 8})
    with pytest.raises(runbook.PlanInvalid, match="unknown stage"):
        runbook.split_params({"platform": "h200", "stages": ["deploy", "bench"]})


def test_stage_parameters_keep_served_model_names_apart():
    config, options = runbook.split_params({"platform": "h200", "model": "kimi-k2.6", "tp": 8})
    folder = Path("/tmp/x")
    invoke = runbook.stage_parameters("invoke", config, options, folder, {"run_dir", "model", "base_url"})
    assert invoke == {"run_dir": "/tmp/x"}  # `model` there is the served name, read from handle.json
    deploy = runbook.stage_parameters(
        "deploy", config, options, folder, {"platform", "model", "tp", "port", "keep_running", "launcher"}
    )
    # no knob but the shared platform: the deploy stage launches the plan the runbook saved in the folder
    assert deploy == {"platform": "h200", "launcher": "emulator", "keep_running": True}


# --------------------------------------------------------------------------- validation first


def test_mi350x_tp8_stops_at_validation_and_starts_nothing(tmp_path):
    run = tmp_path / "run"
    with pytest.raises(pm.PapermillExecutionError) as err:
        run_notebook(
            str(RUNBOOKS / "mi350x.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"tp": 8, "run_dir": str(run)},
        )
    assert err.value.ename == "PlanInvalid"
    assert "amd-aiter-mla-heads" in err.value.evalue and "AITER" in err.value.evalue
    assert "amd-aiter-mla-heads" in (run / RunFolder.PLAN_ERRORS).read_text()
    for started in ("handle.json", "process.json", "server.log", "manifest.json", "stages.jsonl"):
        assert not (run / started).exists(), started
    assert report.verdict(report.collect(RunFolder.of(run))).level == "INVALID"


# --------------------------------------------------------------------------- end to end


def test_tokenspeed_runbooks_say_which_sglang_serves_the_pages_backend():
    # b300 / gb300 run the K2.6 page's cell with --attention-backend tokenspeed_mla (SGLang 0.5.23 as written)
    for platform in ("b300", "gb300"):
        nb = nbformat.read(str(RUNBOOKS / f"{platform}.ipynb"), as_version=4)
        namespace: dict = {}
        exec(next(c for c in nb.cells if c.cell_type == "code").source, namespace)  # noqa: S102 - our own cell
        config, _ = runbook.split_params(runbook.collect_parameters(namespace))
        launch = plan(config)
        assert launch.ok and "tokenspeed-mla-not-in-release" in {w.id for w in launch.warnings}, platform
        assert plan({**config, "sglang_version": "0.5.23"}).memory.kv_cache_dtype == "fp8_e4m3", platform


FAST_SPEED = {"speed": {"scenarios": ["smoke-random-ids-c4"]}}
"""One smoke scenario per platform keeps ten runbooks within CI time; h200 runs the full smoke set."""


@pytest.mark.heavy
@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_runbook_runs_on_the_emulator(platform, tmp_path):
    _require_stages()
    run = tmp_path / "run"
    params = {"run_dir": str(run), "launcher": "emulator", "time_scale": 0.05, "fail_on_error": False}
    if platform != "h200":
        params["stage_overrides"] = FAST_SPEED
    run_notebook(
        str(RUNBOOKS / f"{platform}.ipynb"),
        str(tmp_path / "out.ipynb"),
        parameters=params,
    )
    html = run / RunFolder.REPORT
    assert html.exists() and html.stat().st_size < report_html.MAX_REPORT_BYTES
    assert report.external_references(html.read_text()) == []
    data = report.collect(RunFolder.of(run))
    assert data.emulated and data.stages["deploy"].status == "ok"
    assert (run / "notebooks" / "deploy.ipynb").exists()
    assert any("teardown" in line for line in (run / RunFolder.STAGES).read_text().splitlines())


@pytest.mark.heavy
def test_api_key_never_lands_in_the_run_folder_or_notebook(tmp_path, monkeypatch):
    _require_stages()
    key = "sk-runbook-test-4f9a2c7e1b"
    monkeypatch.setenv("SOME_VAR", key)
    run = tmp_path / "run"
    out = tmp_path / "out.ipynb"
    run_notebook(
        str(RUNBOOKS / "h200.ipynb"),
        str(out),
        parameters={
            "run_dir": str(run),
            "api_key_env": "SOME_VAR",
            "time_scale": 0.05,
            "stages": ["deploy", "invoke", "speed", "report"],
            "stage_overrides": FAST_SPEED,
            "fail_on_error": False,
        },
    )
    assert (run / RunFolder.REPORT).exists()
    invoke = report.collect(RunFolder.of(run)).invoke
    assert invoke and any(r.status == "pass" for r in invoke)  # the key was used and accepted
    leaks = [str(p) for p in [out, *run.rglob("*")] if p.is_file() and key.encode() in p.read_bytes()]
    assert leaks == []


# --------------------------------------------------------------------------- nbval goldens


def _nbval(golden: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--nbval-lax",
        "--nbval-sanitize-with",
        str(NBVAL / "sanitize.cfg"),
        str(NBVAL / golden),
    ]
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(ROOT),
        env={**os.environ, "KIMI_RUNBOOKS_OUTPUTS": str(tmp_path / "outputs"), **env},
    )


def test_nbval_command_generator_golden_passes_and_fails_on_a_changed_flag(tmp_path):
    ok = _nbval("command_generator_mi350x.ipynb", {}, tmp_path)
    assert ok.returncode == 0, ok.stdout[-3000:]

    params = tmp_path / "params"
    shutil.copytree(ROOT / "params", params)
    # one launch flag of the K2.6 page's MI350X cell (params/cookbook/generated): --mem-fraction-static 0.8 -> 0.75
    path = params / "cookbook" / "generated" / "kimi-k2.6@1d8c2d38.yaml"
    path.write_text(path.read_text().replace("--mem-fraction-static 0.8\n", "--mem-fraction-static 0.75\n"))
    bad = _nbval("command_generator_mi350x.ipynb", {"KIMI_RUNBOOKS_PARAMS": str(params)}, tmp_path)
    assert bad.returncode != 0
    assert "Cell outputs differ" in bad.stdout and "-static 0.75" in bad.stdout


@pytest.mark.heavy
def test_nbval_runbook_golden_passes(tmp_path):
    _require_stages()
    result = _nbval("runbook_h200.ipynb", {}, tmp_path)
    assert result.returncode == 0, result.stdout[-4000:]
