"""The real sglang-router over two emulator replicas replays an agentic trace (issue 28 item 3).

The trace is the `agentic` scenario set's coding trace, replayed as bench_serving's agentic-trace
replays it (tests/support/agentic_replay.py, shared with test_router_real_workers.py). One
conversation at a time: with two in lock-step, round_robin can keep each conversation on one replica
by the order they arrive in (it measured 0.899 against cache_aware's 0.908 once), so the test would
hold by chance; one at a time, round_robin alternates every conversation's rounds. Each replica
keeps its own radix cache, so where a round lands decides whether its previous prompt is cached:
cache_aware routing keeps a conversation on the replica that holds its prefix, round_robin spreads
its rounds over both. The measured hit rate is sum(cached_tokens) / sum(prompt_tokens) from
usage.prompt_tokens_details (--enable-cache-report), and both replicas' /metrics must show traffic.

Heavy: needs the router tool env (skipped locally without it; an error with CI=true).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kimi_runbooks.deploy.logpump import start_pumped
from kimi_runbooks.deploy.router import Fleet, RouterAddress, replica_fleet, wait_fleet
from kimi_runbooks.speed.traces import agentic_trace
from kimi_runbooks.target.ports import free_port
from tests.support.agentic_replay import agentic_design, replay, requests_served

pytestmark = pytest.mark.heavy
MODEL = "moonshotai/Kimi-K2.6"


def _start(folder: Path, policy: str) -> Fleet:
    ports = [free_port("127.0.0.1") for _ in range(2)]
    argvs = [
        [sys.executable, "-m", "kimi_runbooks.emulator", "--port", str(p), "--time-scale", "0.02"]
        + ["--enable-cache-report", "--enable-metrics", "--log-level", "warning"]
        for p in ports
    ]
    fleet = replica_fleet(
        argvs,
        [f"http://127.0.0.1:{p}" for p in ports],
        folder,
        RouterAddress("127.0.0.1", free_port("127.0.0.1"), free_port("127.0.0.1")),
        policy=policy,
        env={"PYTHONUNBUFFERED": "1", "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
        start=lambda argv, env, log: start_pumped(argv, env, log, None),
    )
    try:
        wait_fleet(fleet, timeout=120)
    except BaseException:
        fleet.stop()
        raise
    return fleet


def _hit_rate(tmp_path: Path, policy: str) -> tuple[float, list[float]]:
    design = agentic_design()
    trace = agentic_trace(design, seed=1)
    fleet = _start(tmp_path / policy, policy)
    try:
        assert fleet.router is not None
        runs = [replay(fleet.router.url, MODEL, c, design.output_len) for c in trace["conversations"]]
        served = [requests_served(m.url) for m in fleet.backends]
        assert "Starting router" in fleet.router.log.read_text(errors="replace")
    finally:
        fleet.stop()
    prompt, cached = sum(p for p, _ in runs), sum(c for _, c in runs)
    return cached / prompt, served


def test_cache_aware_routing_hits_the_prefix_cache_more_than_round_robin(require_tool_env, tmp_path):
    require_tool_env("router")
    aware, aware_served = _hit_rate(tmp_path, "cache_aware")
    robin, robin_served = _hit_rate(tmp_path, "round_robin")
    print(f"\nmeasured prefix-cache hit rate (EMULATED, 2 replicas): cache_aware {aware:.3f}, round_robin {robin:.3f}")
    print(f"requests per replica: cache_aware {aware_served}, round_robin {robin_served}")
    assert all(n > 0 for n in robin_served)  # round_robin spreads over both replicas
    assert sum(aware_served) == sum(robin_served)
    assert aware > robin + 0.03, (aware, robin)
