"""A runbook rehearsed through the real sglang-router (a replica fleet or PD pools), shared by the
router runbook tests: the run itself, its PASS (EMULATED) verdict, and every process group gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kimi_runbooks import report
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.procs import group_alive
from kimi_runbooks.rundir import RunFolder
from tests.support import run_notebook


def rehearse_through_router(tmp_path: Path, platform: str, **parameters: Any) -> RunFolder:
    """Run runbooks/<platform>.ipynb (deploy, invoke, a small speed scenario, report) and check it PASSes."""
    run = tmp_path / "run"
    run_notebook(
        str(REPO_ROOT / "runbooks" / f"{platform}.ipynb"),
        str(tmp_path / "out.ipynb"),
        parameters={
            **parameters,
            "run_dir": str(run),
            "time_scale": 0.05,
            "stages": ["deploy", "invoke", "speed", "report"],
            "stage_overrides": {"speed": {"scenarios": ["smoke-random-ids-c4"]}},
        },
    )
    data = report.collect(RunFolder.of(run))
    verdict = report.verdict(data)
    assert verdict.level == "PASS" and data.emulated, verdict
    return RunFolder(run)


def assert_fleet_stopped(folder: RunFolder, groups: int) -> None:
    """process.json names the server's group and the fleet's others; none is left running."""
    record = json.loads(folder.file(RunFolder.PROCESS).read_text())
    found = [record["pgid"], *(g for g, _ in record["extra_pgids"])]
    assert len(found) == groups and not any(group_alive(g) for g in found)
