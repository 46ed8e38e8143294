"""Issue 13 cases 4 and 8 through the runbook: bad inputs stop it with PlanInvalid before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_runbooks import runbook


@pytest.mark.parametrize("inside", [False, True])
def test_a_run_dir_that_is_a_file_is_a_clear_error(tmp_path: Path, inside: bool) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    run_dir = a_file / "run" if inside else a_file
    with pytest.raises(runbook.PlanInvalid, match=r"(run folder|run_dir) .*Fix: .*Nothing was started"):
        runbook.run_runbook({"platform": "h200", "run_dir": str(run_dir), "stages": ["deploy"]})


def test_env_names_are_validated_before_anything_starts(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with pytest.raises(runbook.PlanInvalid, match="not environment variable names") as info:
        runbook.run_runbook(
            {"platform": "h200", "run_dir": str(run_dir), "env": {"A=1 touch pwned; B": "x"}, "stages": ["deploy"]}
        )
    assert "Nothing was started" in str(info.value)
    assert not (run_dir / "handle.json").exists() and not list(tmp_path.rglob("pwned"))


def test_a_read_only_run_dir_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder this user cannot write (simulated: tests run as root, which permissions do not stop)."""
    import os

    from kimi_runbooks import rundir

    real_access = os.access
    monkeypatch.setattr(
        rundir.os, "access", lambda p, mode: False if str(p).endswith("ro-run") else real_access(p, mode)
    )
    with pytest.raises(
        runbook.PlanInvalid, match=r"not writable\. Fix: choose a writable run_dir\. Nothing was started"
    ):
        runbook.run_runbook({"platform": "h200", "run_dir": str(tmp_path / "ro-run"), "stages": ["deploy"]})


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e9])
def test_a_time_scale_that_would_never_end_is_refused_before_anything_starts(tmp_path: Path, value: float) -> None:
    with pytest.raises(runbook.PlanInvalid, match="time_scale") as info:
        runbook.run_runbook({"platform": "h200", "run_dir": str(tmp_path / "run"), "time_scale": value})
    assert "Nothing was started" in str(info.value) or "Fix" in str(info.value)
    assert not (tmp_path / "run" / "runbook.json").exists()


@pytest.mark.parametrize("value", ["inf", "nan", "0", "5000"])
def test_the_emulator_refuses_a_time_scale_that_would_never_end(value: str) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.emulator", "--time-scale", value, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "--time-scale must be a number above 0 and at most 1000" in proc.stderr
