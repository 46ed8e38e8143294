"""A measured run folder becomes a reference the performance model fits (perfmodel/from_run.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from kimi_runbooks.catalog import Catalog, load_catalog
from kimi_runbooks.perfmodel.__main__ import main
from kimi_runbooks.perfmodel.calibration import runs
from kimi_runbooks.perfmodel.from_run import ReferenceFromRunError, reference_from_run, write_reference
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.plan import PlanConfig, plan
from kimi_runbooks.plan.saved import save_plan
from kimi_runbooks.rundir import RunFolder


def _bench_row(
    scenario: str, concurrency: int, tpot: float, *, status: str = "ok", rate: str = "inf"
) -> dict[str, Any]:
    argv = ["python", "-m", "sglang.bench_serving", "--dataset-name", "random", "--random-input-len", "1024"]
    argv += ["--random-output-len", "1024", "--random-range-ratio", "1.0", "--request-rate", rate]
    metrics = {
        "completed": 10 * concurrency,
        "max_concurrency": concurrency,
        "total_input_tokens": 1024 * 10 * concurrency,
        "total_output_tokens": 1000 * 10 * concurrency,
        "median_ttft_ms": 180.0 + concurrency,
        "median_tpot_ms": tpot,
        "output_throughput": concurrency * 1000.0 / tpot,
    }
    return {
        "scenario": scenario,
        "status": status,
        "emulated": False,
        "rehearsal": False,
        "max_concurrency": concurrency,
        "argv": argv,
        "metrics": metrics,
    }


def _measured_run(folder: RunFolder, catalog: Catalog, rows: list[dict[str, Any]], **manifest: Any) -> RunFolder:
    launch = plan(PlanConfig(platform="mi355x", model="kimi-k2.6", tp=8), catalog)
    save_plan(folder, launch)
    record = {"emulated": False, "launcher": "external", "started_at": "2026-12-08T01:00:00+00:00", **manifest}
    folder.manifest.write_text(json.dumps(record), encoding="utf-8")
    folder.file(RunFolder.BENCH).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture
def params_copy(catalog: Catalog, tmp_path: Path) -> Path:
    target = tmp_path / "params"
    shutil.copytree(catalog.root, target)
    return target


ROWS = [
    _bench_row("chat-c1", 1, 99.0),  # an earlier attempt: the latest of a scenario wins
    _bench_row("chat-c1", 1, 20.0),
    _bench_row("chat-c16", 16, 40.0),
    _bench_row("chat-c32", 32, 60.0, status="failed"),
    _bench_row("chat-rate4", 8, 30.0, rate="4"),
]


def test_a_measured_run_becomes_a_page_the_model_fits(
    catalog: Catalog, run_folder: RunFolder, params_copy: Path
) -> None:
    folder = _measured_run(run_folder, catalog, ROWS)
    ref = reference_from_run(folder, "lab-k26-mi355x", "measured by the lab, 2026-12-08", "8x MI355X")
    assert [r["scenario"] for r in ref.data["rows"]] == ["chat-c1", "chat-c16"]
    assert ref.data["rows"][0]["metrics"]["median_tpot_ms"] == 20.0  # not the earlier 99
    assert ref.data["rows"][1] | {"metrics": None} == {
        "scenario": "chat-c16",
        "input_len": 1024,
        "output_len": 1000,
        "concurrency": 16,
        "num_prompts": 160,
        "range_ratio": 1.0,
        "metrics": None,
    }
    assert len(ref.left_out) == 2 and "failed" in ref.left_out[0] and "request rate 4" in ref.left_out[1]
    assert ref.data["stack"]["sglang_version"] == ref.data["sglang_version"]
    path = write_reference(ref, params_copy)

    fitted = load_catalog(params_copy)
    mine = [o for o in observations(fitted) if o.reference_id == "lab-k26-mi355x"]
    assert {(o.scenario_id, o.metric, o.published) for o in mine} >= {
        ("chat-c1", "median_tpot_ms", 20.0),
        ("chat-c16", "output_throughput", 400.0),
    }
    assert all(o.family == "amd-cdna" and o.fit and o.scenario.fixed_lengths for o in mine)
    before = runs(observations(catalog))["amd-cdna"]
    assert runs(observations(fitted))["amd-cdna"] == before + 2  # two more runs for AMD's budget
    with pytest.raises(ReferenceFromRunError, match="reference-ids-are-unique"):
        write_reference(ref, params_copy)
    assert path.name == "speed-lab-k26-mi355x.yaml"


@pytest.mark.parametrize(
    ("manifest", "rule"),
    [({"emulated": True, "launcher": "emulator"}, "EMULATED"), ({"launcher": "sglang-cpu"}, "CPU rehearsal")],
)
def test_emulated_runs_and_rehearsals_are_refused(
    catalog: Catalog, run_folder: RunFolder, manifest: dict[str, Any], rule: str
) -> None:
    folder = _measured_run(run_folder, catalog, ROWS, **manifest)
    with pytest.raises(ReferenceFromRunError, match=f"measured-runs-only.*{rule}"):
        reference_from_run(folder, "lab-run", "somewhere")


def test_a_run_with_nothing_finished_or_no_plan_says_so(catalog: Catalog, run_folder: RunFolder) -> None:
    with pytest.raises(ReferenceFromRunError, match="run-has-a-plan"):
        reference_from_run(run_folder, "lab-run", "somewhere")
    folder = _measured_run(run_folder, catalog, [_bench_row("c1", 1, 20.0, status="failed")])
    with pytest.raises(ReferenceFromRunError, match="run-has-finished-scenarios.*status 'failed'"):
        reference_from_run(folder, "lab-run", "somewhere")


@pytest.mark.parametrize("bad_id", ["../escape", "$(touch x)", "A", "has space", ""])
def test_hostile_ids_are_refused_before_anything_is_read(run_folder: RunFolder, bad_id: str) -> None:
    with pytest.raises(ReferenceFromRunError, match="reference-id-is-a-slug"):
        reference_from_run(run_folder, bad_id, "somewhere")


def test_the_source_is_kept_literally_and_secrets_never_reach_the_file(
    catalog: Catalog, run_folder: RunFolder, params_copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAB_TOKEN", "tok-9f8e7d6c5b4a")
    folder = _measured_run(run_folder, catalog, ROWS)
    source = 'lab\'s "run" $(rm -rf /) `x`; token tok-9f8e7d6c5b4a'
    path = write_reference(reference_from_run(folder, "lab-run", source), params_copy, ["LAB_TOKEN"])
    text = path.read_text(encoding="utf-8")
    assert "tok-9f8e7d6c5b4a" not in text
    assert yaml.safe_load(text)["source"].startswith('lab\'s "run" $(rm -rf /) `x`; token ')


def test_the_command_refuses_with_the_rule_and_exit_2(
    catalog: Catalog, run_folder: RunFolder, params_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _measured_run(run_folder, catalog, ROWS, emulated=True)
    argv = [
        "reference-from-run",
        str(folder.path),
        "--id",
        "lab-run",
        "--source",
        "x",
        "--params-dir",
        str(params_copy),
    ]
    assert main(argv) == 2
    assert "measured-runs-only" in capsys.readouterr().err
    folder = _measured_run(run_folder, catalog, ROWS)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert (
        "wrote" in out and "left out: chat-c32" in out and (params_copy / "references" / "speed-lab-run.yaml").is_file()
    )


@pytest.mark.parametrize(("served", "expected"), [("0.5.11", "0.5.11"), ("0.5.23-emulated", "0.5.9"), (None, "0.5.9")])
def test_the_version_is_what_the_server_reported_when_it_is_a_release(
    catalog: Catalog, run_folder: RunFolder, served: str | None, expected: str
) -> None:
    folder = _measured_run(run_folder, catalog, ROWS, sglang_version=served)
    ref = reference_from_run(folder, "lab-run", "somewhere")
    assert ref.data["sglang_version"] == ref.data["stack"]["sglang_version"] == expected


def test_a_missing_run_dir_or_a_file_given_as_one_is_refused_with_the_fix(
    tmp_path: Path, params_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-run"
    with pytest.raises(ReferenceFromRunError, match="run-dir-exists"):
        reference_from_run(RunFolder(missing), "lab-run", "somewhere")
    assert not missing.exists()  # nothing created
    a_file = tmp_path / "bench.jsonl"
    a_file.write_text("{}\n", encoding="utf-8")
    for path in (missing, a_file):
        argv = ["reference-from-run", str(path), "--id", "lab-run", "--source", "x", "--params-dir", str(params_copy)]
        assert main(argv) == 2
        assert "Fix:" in capsys.readouterr().err


def test_every_repeat_of_a_repeated_scenario_is_a_row_and_one_run(
    catalog: Catalog, run_folder: RunFolder, params_copy: Path
) -> None:
    """A scenario run `repeats: 2` appends one row per repeat; both are kept (the last alone was before)."""
    rows = [_bench_row("chat-c4", 4, tpot) | {"repeat": k, "repeats": 2} for k, tpot in ((1, 30.0), (2, 32.0))]
    ref = reference_from_run(_measured_run(run_folder, catalog, rows), "lab-run", "somewhere")
    assert [(r["scenario"], r["repeat"], r["metrics"]["median_tpot_ms"]) for r in ref.data["rows"]] == [
        ("chat-c4", 1, 30.0),
        ("chat-c4", 2, 32.0),
    ]
    write_reference(ref, params_copy)
    fitted = load_catalog(params_copy)
    assert runs(observations(fitted))["amd-cdna"] == runs(observations(catalog))["amd-cdna"] + 1
