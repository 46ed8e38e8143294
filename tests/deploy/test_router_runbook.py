"""An Ascend PD runbook rehearses through the real sglang-router (issue 28 item 3).

`runbooks/ascend-a3.ipynb -p deployment ascend-a3-1p1d-16p-in128k-out1k` (the 1P1D deployment of
SGLang's Ascend best-practice page): the deploy stage starts an emulated prefill server, an emulated
decode server and the router with the deployment's own router flags (--pd-disaggregation
--policy cache_aware); invoke and speed go to the router's URL; the run ends PASS (EMULATED).
The router's log is in logs/router.log, and each pool's log says how many requests it served with
a bootstrap room the router gave them; every process is gone after the run.

Heavy: needs the router tool env (skipped locally without it; an error with CI=true).
"""

from __future__ import annotations

import json
import re

import pytest

from kimi_runbooks.rundir import RunFolder
from tests.support.fleet_runbook import assert_fleet_stopped, rehearse_through_router

pytestmark = pytest.mark.heavy
DEPLOYMENT = "ascend-a3-1p1d-16p-in128k-out1k"
SERVED = re.compile(r"PD (prefill|decode) server: served (\d+) requests with a bootstrap room")


def _served(text: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in SERVED.finditer(text)}


def test_the_ascend_1p1d_runbook_passes_through_the_router(require_tool_env, tmp_path):
    require_tool_env("router")
    run = rehearse_through_router(tmp_path, "ascend-a3", deployment=DEPLOYMENT)
    router_log = (run.logs / RunFolder.ROUTER_LOG).read_text(errors="replace")
    assert "PrefillDecode" in router_log  # the router ran in PD mode, with the deployment's policy
    assert router_log.count("finished processing request") > 10
    prefill = _served(run.member_log("prefill-0").read_text(errors="replace"))
    decode = _served(run.server_log.read_text(errors="replace"))
    assert prefill.get("prefill", 0) > 10 and decode.get("decode", 0) > 10, (prefill, decode)
    assert abs(prefill["prefill"] - decode["decode"]) <= 2  # each request went to both pools of the pair
    manifest = json.loads(run.file(RunFolder.MANIFEST).read_text())
    assert manifest["max_total_num_tokens"], "the serving facts come from the decode server behind the router"
    assert_fleet_stopped(run, groups=3)
