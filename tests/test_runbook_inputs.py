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
