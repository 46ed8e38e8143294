"""The speed stage behind the real sglang-router reads the cache hit rate from the replicas (issue 42 item 2).

Two emulator replicas (--enable-cache-report --enable-metrics) behind sglang-router 0.3.2 with
--policy cache_aware; the speed stage replays the `agentic` set's coding trace (4 conversations of 6
rounds) through the router with SGLang's own bench_serving, the handle naming the servers behind it
as the deploy stage records them. bench_serving reads cached tokens from the `sglext` block of each
answer, which the router does not pass on: its cache report says 0%. The row's hit rate is the
replicas' own (their /metrics counters), the requests per replica add up to what was sent, and the
replica the router left idle is named. Measured: bench_serving 0% (0 of 61,320 prompt tokens cached),
the replicas 0.826 (63,294 of 76,650, the warm-up conversation included), 30 of 30 requests on one
replica; about 16 s (fleet start-up, bench_serving's import and the replay).

Heavy: needs the router and bench tool envs (skipped locally without them; an error with CI=true).
"""

from __future__ import annotations

import sys
import time

import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.deploy.logpump import start_pumped
from kimi_runbooks.deploy.router import RouterAddress, replica_fleet, wait_fleet
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle
from kimi_runbooks.target.ports import free_port
from tests.support.agentic_replay import agentic_design

pytestmark = pytest.mark.heavy
MODEL = "moonshotai/Kimi-K2.6"


def test_behind_the_router_the_hit_rate_is_the_replicas_not_bench_servings_zero(require_tool_env, tmp_path):
    require_tool_env("router")
    tokenizer = make_offline_tokenizer(tmp_path / "tokenizer", env=require_tool_env("bench"))
    ports = [free_port("127.0.0.1") for _ in range(2)]
    argvs = [
        [sys.executable, "-m", "kimi_runbooks.emulator", "--port", str(p), "--time-scale", "0.02"]
        + ["--enable-cache-report", "--enable-metrics", "--log-level", "warning"]
        for p in ports
    ]
    urls = [f"http://127.0.0.1:{p}" for p in ports]
    fleet = replica_fleet(
        argvs, urls, tmp_path, RouterAddress("127.0.0.1", free_port("127.0.0.1"), free_port("127.0.0.1")),
        policy="cache_aware", env={"PYTHONUNBUFFERED": "1", "PATH": "/usr/bin:/bin"},
        start=lambda argv, env, log: start_pumped(argv, env, log, None),
    )  # fmt: skip
    agentic = next(s for s in load_catalog().scenario_sets["agentic"].scenarios if s.dataset == "agentic-trace")
    scenario = agentic.model_copy(update={"trace": agentic_design(turns=6)})
    t0 = time.monotonic()
    try:
        wait_fleet(fleet, timeout=120)
        assert fleet.router is not None
        handle = RunHandle(
            base_url=fleet.router.url, model=MODEL, launcher="emulator", emulated=True, time_scale=0.02,
            backends=[{"name": m.name, "url": m.url, "role": "replica"} for m in fleet.backends],
            router_policy="cache_aware",
        )  # fmt: skip
        speed.run_scenarios(
            [scenario], handle, RunFolder.create(tmp_path / "run"), tokenizer=tokenizer, offline=True, timeout_s=300,
            progress=False, verify_tokens=False, answer_probe=0,
        )  # fmt: skip
    finally:
        fleet.stop()
    row = read_jsonl(tmp_path / "run" / "bench.jsonl")[-1]
    fleet_seen = row["replicas"]
    print(f"\n{time.monotonic() - t0:.1f} s; bench_serving's cache report {row['cache_report']}; replicas {fleet_seen}")
    assert row["status"] == "ok", row.get("error")
    assert row["cache_report"]["cache_hit_rate_pct"] == 0.0  # the router dropped sglext: what the report showed
    assert row["cache_hit_rate"] == fleet_seen["cache_hit_rate"] > 0.5
    sent = sum(s["requests"] for s in fleet_seen["servers"])
    assert sent == 4 * 6 + 6  # the trace's rounds, and its warm-up: bench_serving replays one whole conversation
    assert all(t["cache_hit_rate"] is None for t in row["turns"])  # not bench_serving's per-turn zeros
    # the router answers /metrics with 404: the replicas' gauges are sampled instead, as one server's
    assert row["server"]["samples"] >= 2 and "note" not in row["server"] and row["server"]["peak_running"] >= 1
    # every conversation starts with the same system prompt, so cache_aware keeps all of them on the
    # replica that cached it first (measured: 30 of 30, hit rate 0.826): the other one is named
    assert sorted(s["requests"] for s in fleet_seen["servers"]) == [0, sent]
    assert len(fleet_seen["starved"]) == 1 and f"served 0 of {sent} requests" in fleet_seen["starved"][0]
