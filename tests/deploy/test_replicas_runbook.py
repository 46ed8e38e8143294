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

from kimi_runbooks.rundir import RunFolder
from tests.support.fleet_runbook import assert_fleet_stopped, rehearse_through_router

pytestmark = pytest.mark.heavy
SERVED = re.compile(r"server: finished (\d+) generation requests")


def test_two_replicas_behind_the_router_pass_the_runbook(require_tool_env, tmp_path):
    require_tool_env("router")
    run = rehearse_through_router(tmp_path, "mi300x", tp=4, replicas=2, router_policy="cache_aware")
    plan = json.loads(run.file(RunFolder.PLAN).read_text())
    assert [n["role"] for n in plan["nodes"]] == ["replica", "replica"]
    assert "--policy cache_aware" in plan["router"]["command"]
    router_log = (run.logs / RunFolder.ROUTER_LOG).read_text(errors="replace")
    assert router_log.count("finished processing request") > 10
    served = [
        sum(int(n) for n in SERVED.findall(log.read_text(errors="replace")))
        for log in (run.server_log, run.member_log("replica-1"))
    ]
    assert all(count > 0 for count in served), served  # both replicas answered requests the router sent
    # the speed stage read each replica's own counters (issue 42 item 2): the deploy handle names them
    row = [json.loads(line) for line in run.file(RunFolder.BENCH).read_text().splitlines()][-1]
    split = row["replicas"]
    assert [s["name"] for s in split["servers"]] == ["replica-0", "replica-1"] and split["policy"] == "cache_aware"
    assert sum(s["requests"] for s in split["servers"]) >= row["metrics"]["completed"]
    assert_fleet_stopped(run, groups=3)
