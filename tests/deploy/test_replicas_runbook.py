"""A replicas plan rehearses through the real sglang-router (issue 28 item 3).

`runbooks/mi300x.ipynb -p replicas 2 -p router_policy cache_aware` (the MI300X recipe's tp 4, twice
on one 8-GPU node): the deploy stage starts two emulated replicas and sglang-router in front of them
with `--worker-urls` and `--policy cache_aware`; invoke and speed go to the router's URL; the run
ends PASS (EMULATED), both replicas served requests, and every process is gone after the run.

Heavy: needs the router tool env (skipped locally without it; an error with CI=true).
"""

from __future__ import annotations

import json
import re

import pytest

from kimi_runbooks import report
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.procs import group_alive
from kimi_runbooks.rundir import RunFolder
from tests.support import run_notebook

pytestmark = pytest.mark.heavy
SERVED = re.compile(r"server: finished (\d+) generation requests")


def test_two_replicas_behind_the_router_pass_the_runbook(require_tool_env, tmp_path):
    require_tool_env("router")
    run = tmp_path / "run"
    run_notebook(
        str(REPO_ROOT / "runbooks" / "mi300x.ipynb"),
        str(tmp_path / "out.ipynb"),
        parameters={
            "tp": 4,
            "replicas": 2,
            "router_policy": "cache_aware",
            "run_dir": str(run),
            "time_scale": 0.05,
            "stages": ["deploy", "invoke", "speed", "report"],
            "stage_overrides": {"speed": {"scenarios": ["smoke-random-ids-c4"]}},
        },
    )
    data = report.collect(run)
    verdict = report.verdict(data)
    assert verdict.level == "PASS" and data.emulated, verdict
    plan = json.loads((run / RunFolder.PLAN).read_text())
    assert [n["role"] for n in plan["nodes"]] == ["replica", "replica"]
    assert "--policy cache_aware" in plan["router"]["command"]
    router_log = (run / "logs" / RunFolder.ROUTER_LOG).read_text(errors="replace")
    assert router_log.count("finished processing request") > 10
    served = [
        sum(int(n) for n in SERVED.findall(log.read_text(errors="replace")))
        for log in (run / RunFolder.SERVER_LOG, run / "logs" / "emulator-replica-1.log")
    ]
    assert all(count > 0 for count in served), served  # both replicas answered requests the router sent
    record = json.loads((run / RunFolder.PROCESS).read_text())
    groups = [record["pgid"], *(g for g, _ in record["extra_pgids"])]
    assert len(groups) == 3 and not any(group_alive(g) for g in groups)
