"""RunFolder.of: the one conversion of "a run folder or its path" at a stage's boundary."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_runbooks.rundir import OUTPUTS_ENV, RunFolder, RunFolderError


def test_a_run_folder_passes_through_with_its_secret_names(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("RUNDIR_TEST_KEY", "sk-rundir-test-value-123")
    folder = RunFolder.create(tmp_path / "run")
    same = RunFolder.of(folder, create=True, secret_envs=["RUNDIR_TEST_KEY", None])
    assert same is folder
    assert RunFolder.of(folder.path).secret_envs == ["RUNDIR_TEST_KEY"]  # recorded in the folder
    same.save_text("x.txt", "key=sk-rundir-test-value-123")
    assert "sk-rundir-test-value-123" not in (folder.path / "x.txt").read_text()


def test_a_path_is_opened_and_created_only_when_asked(tmp_path: Path, monkeypatch) -> None:
    opened = RunFolder.of(tmp_path / "later")
    assert opened.path == tmp_path / "later" and not opened.path.exists()
    made = RunFolder.of(str(tmp_path / "now"), create=True)
    assert made.path.is_dir()
    monkeypatch.setenv(OUTPUTS_ENV, str(tmp_path / "outputs"))
    fresh = RunFolder.of(None, label="h200")
    assert fresh.path.parent == tmp_path / "outputs" and fresh.run_id.endswith("-h200") and fresh.path.is_dir()
    (tmp_path / "file").write_text("")
    with pytest.raises(RunFolderError, match="is a file, not a folder"):
        RunFolder.of(tmp_path / "file")


def test_every_named_file_is_the_folder_path_and_its_constant(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    for attr in ("handle", "manifest", "plan", "plan_errors", "runbook", "stages", "process", "preflight"):
        assert getattr(folder, attr) == tmp_path / getattr(RunFolder, attr.upper())
    assert (folder.server_log, folder.invoke, folder.bench, folder.accuracy, folder.report) == tuple(
        tmp_path / n for n in ("server.log", "invoke.json", "bench.jsonl", "accuracy.jsonl", "report.html")
    )
    assert (folder.sbatch, folder.steps) == (tmp_path / RunFolder.SBATCH, tmp_path / RunFolder.STEPS)


def test_row_number_reads_numbers_and_strings_and_nan_for_the_rest():
    import math

    from kimi_runbooks.rundir import row_number

    assert [row_number(v) for v in (3, 2.5, "7", " 1e3 ", True)] == [3.0, 2.5, 7.0, 1000.0, 1.0]
    for missing in (None, "", "n/a", [1], {"value": 1}, math.nan):
        assert math.isnan(row_number(missing)), missing
