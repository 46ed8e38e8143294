"""Issue 42 item 2: behind sglang-router, the cache hit rate and the requests per server come from each
server's own /metrics, a router that starves a server is flagged, and the report never shows
bench_serving's 0% (the router drops the `sglext` cache details it reads) where the servers hit 90%.

Two in-thread emulators stand for the replicas; the scenario's requests all go to one of them, as
cache_aware sent 48 of 48 when every conversation shared the system prompt. The real router in front
of emulators is test_replicas_router.py (heavy).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.report import sections
from kimi_runbooks.report.collect import RunData
from kimi_runbooks.report.verdict import verdict
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed import replicas
from kimi_runbooks.speed.observe import ObserveConfig, ScenarioObserver
from kimi_runbooks.speed.results import RESULTS_FILE, load_results
from kimi_runbooks.target.locate import RunHandle
from tests.support import append_jsonl

SYSTEM = "You are a careful coding agent working in a large repository. " * 60


@pytest.fixture(scope="module")
def two_replicas() -> Iterator[list[replicas.Backend]]:
    stops = []
    backends = []
    for i in range(2):
        url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False))
        stops.append(stop)
        backends.append(replicas.Backend(f"replica-{i}", url, "replica"))
    yield backends
    for stop in stops:
        stop()


def _conversation(url: str, rounds: int) -> None:
    messages = [{"role": "system", "content": SYSTEM}]
    with httpx.Client(timeout=30) as client:
        for k in range(rounds):
            messages.append({"role": "user", "content": f"step {k}: run the tests and read the failure"})
            answer = client.post(
                f"{url}/v1/chat/completions",
                json={"model": "moonshotai/Kimi-K2.6", "messages": messages, "max_tokens": 8},
            )
            answer.raise_for_status()
            messages.append({"role": "assistant", "content": answer.json()["choices"][0]["message"]["content"] or ""})


def _scenario() -> Scenario:
    return Scenario(id="agentic-c2", dataset="random-ids", input_len=64, output_len=8, num_prompts=6, max_concurrency=2)


def test_the_servers_counters_give_each_ones_requests_and_hit_rate_and_flag_the_idle_one(two_replicas, tmp_path):
    config = ObserveConfig(metrics=False, backends=tuple(two_replicas), router_policy="cache_aware")
    observer = ScenarioObserver(config, two_replicas[0].url, RunFolder.create(tmp_path / "run"), _scenario())
    with observer:
        _conversation(two_replicas[0].url, rounds=6)  # what cache_aware did: every request to one replica
    found = observer.derive({}, None, emulated=True)["replicas"]
    busy, idle = found["servers"]
    assert (busy["requests"], idle["requests"]) == (6, 0)
    assert busy["prompt_tokens"] > 0 and busy["cached_tokens"] > 0.8 * busy["prompt_tokens"]
    assert found["cache_hit_rate"] == busy["cache_hit_rate"] > 0.8
    assert found["requests"] == "6/0" and found["policy"] == "cache_aware"
    assert len(found["starved"]) == 1 and found["starved"][0].startswith("replica-1 served 0 of 6 requests")


def test_an_even_split_is_not_flagged_and_too_few_requests_are_not_judged():
    def server(name: str, n: int) -> dict:
        return {"name": name, "role": "replica", "requests": n}

    assert replicas.starved_servers([server("a", 5), server("b", 3)]) == []
    assert replicas.starved_servers([server("a", 3), server("b", 0)]) == []  # 1.5 a server: says nothing
    assert len(replicas.starved_servers([server("a", 4), server("b", 0)])) == 1


def test_a_server_without_metrics_is_named_not_counted_as_zero(two_replicas):
    gone = replicas.Backend("replica-9", "http://127.0.0.1:9", "replica")
    counts = replicas.read_counters([two_replicas[0], gone], timeout=2)
    found = replicas.split([two_replicas[0], gone], counts, counts)
    assert [s["name"] for s in found["servers"]] == ["replica-0"]
    assert "http://127.0.0.1:9/metrics failed" in found["unread"][0]


def test_the_deploy_handle_carries_the_servers_behind_the_router_to_the_speed_stage():
    handle = RunHandle(
        base_url="http://127.0.0.1:30000",
        model="m",
        launcher="emulator",
        backends=[{"name": "replica-0", "url": "http://127.0.0.1:30001", "role": "replica"}],
        router_policy="round_robin",
    )
    again = RunHandle.model_validate_json(handle.model_dump_json())
    assert [replicas.Backend.of(b) for b in again.backends] == [
        replicas.Backend("replica-0", "http://127.0.0.1:30001", "replica")
    ]


def _row_through_router() -> dict:
    """A row as the runner writes it behind the router: bench_serving's 0% and the servers' 90.6%."""
    fleet = {
        "policy": "cache_aware",
        "servers": [
            {"name": "replica-0", "role": "replica", "requests": 48, "prompt_tokens": 1000, "cached_tokens": 906},
            {"name": "replica-1", "role": "replica", "requests": 0, "prompt_tokens": 0, "cached_tokens": 0},
        ],
        "cache_hit_rate": 0.906,
        "cache_hit_rate_source": replicas.HIT_RATE_SOURCE,
        "requests": "48/0",
        "starved": replicas.starved_servers(
            [
                {"name": "replica-0", "role": "replica", "requests": 48},
                {"name": "replica-1", "role": "replica", "requests": 0},
            ]
        ),
    }
    row = {
        "scenario": "agentic-c8",
        "status": "ok",
        "emulated": True,
        "metrics": {"median_ttft_ms": 20.0, "completed": 48},
        "cache_report": {"cache_hit_rate_pct": 0.0, "total_cached_tokens": 0},
        "cache_hit_rate": 0.0,  # bench_serving's, through the router
        "turns": [{"turn": 0, "median_ttft_ms": 20.0, "mean_context_tokens": 900.0, "cache_hit_rate": 0.0}],
        "replicas": fleet,
    }
    return replicas.behind_router(row)


def test_behind_the_router_the_report_shows_the_servers_hit_rate_and_warns_of_the_starved_replica(tmp_path):
    row = _row_through_router()
    assert row["cache_hit_rate"] == 0.906 and row["turns"][0]["cache_hit_rate"] is None
    append_jsonl(tmp_path / RESULTS_FILE, row)
    speed = load_results(tmp_path)
    data = RunData(tmp_path, "e1", {}, None, [], None, {"emulated": True}, None, speed, None, {})
    html = sections.speed_section(data)
    assert "90.6% (servers&#x27; /metrics)" in html or "90.6% (servers' /metrics)" in html
    assert "0.0%" not in html and "48/0" in html
    found = verdict(data)
    assert found.level == "WARN" and "starved" in found.headline
    assert any("replica-1 served 0 of 48 requests" in r for r in found.reasons)


def test_a_single_server_row_is_left_as_bench_serving_measured_it():
    row = {"scenario": "s", "cache_hit_rate": 0.42, "turns": [{"turn": 0, "cache_hit_rate": 0.4}]}
    assert replicas.behind_router(row) == row


def test_behind_the_router_the_sampler_reads_the_replicas_gauges_as_one_server(two_replicas, tmp_path):
    """sglang-router answers /metrics on its own port with 404: the replicas are scraped instead."""
    backends = (*two_replicas, replicas.Backend("prefill-0", "http://127.0.0.1:9", "prefill"))
    config = ObserveConfig(metrics=True, backends=backends)
    observer = ScenarioObserver(config, "http://127.0.0.1:9", RunFolder.create(tmp_path / "run"), _scenario())
    assert observer.metrics is not None and observer.metrics.servers == tuple(b.url for b in two_replicas)
    with observer:
        _conversation(two_replicas[1].url, rounds=2)
    server = observer.derive({}, None, emulated=True)["server"]
    assert server["samples"] >= 2 and "note" not in server
    single = replicas.parse_counters(httpx.get(f"{two_replicas[0].url}/metrics").text)
    assert single is not None  # each replica's page is read, the unreachable prefill address never is


def test_servers_read_as_one_sum_their_counts_and_keep_the_largest_fraction():
    from kimi_runbooks.speed.server_metrics import merge

    a = {"num_running_reqs": 3.0, "token_usage": 0.2, "time_to_first_token_seconds_count": 5.0}
    b = {"num_running_reqs": 1.0, "token_usage": 0.7, "time_to_first_token_seconds_count": 2.0}
    assert merge([a, b]) == {"num_running_reqs": 4.0, "token_usage": 0.7, "time_to_first_token_seconds_count": 7.0}
