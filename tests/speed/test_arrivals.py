"""Arrival rates as scenario options (speed/arrivals.py): poisson is bench_serving's own --request-rate,
constant is replayed as a generated mooncake trace; the heavy test runs the real client against an
emulator that notes when each request arrives."""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kimi_runbooks import speed
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed.arrivals import BLOCK_TOKENS, constant_trace, prepare_constant
from kimi_runbooks.target.locate import RunHandle
from tests.support import tiny_scenario

TARGET = "http://127.0.0.1:30000"


def _argv(scenario: Any, **kw: Any) -> list[str]:
    return speed.build_argv(scenario, TARGET, output_file="out.jsonl", client=speed.BenchClient(python="python", **kw))


def test_poisson_is_bench_servings_request_rate() -> None:
    argv = _argv(tiny_scenario("p", arrival="poisson", request_rate=4.0))
    assert argv[argv.index("--request-rate") + 1] == "4"
    assert argv[argv.index("--dataset-name") + 1] == "random-ids" and "--mooncake-num-rounds" not in argv


def test_constant_is_a_mooncake_replay_of_evenly_spaced_records(tmp_path: Path) -> None:
    scenario = tiny_scenario("k", input_len=300, num_prompts=5, arrival="constant", request_rate=4.0, backend="sglang")
    rows = constant_trace(scenario)
    assert [r["timestamp"] for r in rows] == [0.0, 250.0, 500.0, 750.0, 1000.0]
    assert {len(r["hash_ids"]) for r in rows} == {3} and rows[0]["input_length"] == 3 * BLOCK_TOKENS
    assert len({h for r in rows for h in r["hash_ids"]}) == 15  # no prefix shared between requests
    assert {r["output_length"] for r in rows} == {16}
    path, _ = prepare_constant(scenario, RunFolder.create(tmp_path))
    argv = _argv(scenario, dataset_path=path)
    assert argv[argv.index("--dataset-name") + 1] == "mooncake"
    assert argv[argv.index("--dataset-path") + 1] == str(path)
    assert argv[argv.index("--mooncake-num-rounds") + 1] == "1" and "--flush-cache" in argv
    assert "--request-rate" not in argv and "--random-input-len" not in argv  # mooncake ignores both
    with pytest.raises(speed.BenchConfigError, match="generated mooncake trace"):
        _argv(scenario)


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"arrival": "poisson"}, "arrival-needs-rate"),
        ({"arrival": "poisson", "request_rate": "inf"}, "arrival-needs-rate"),
        ({"arrival": "constant", "request_rate": 2.0, "backend": "sglang-oai"}, "backend: sglang"),
        ({"arrival": "constant", "request_rate": 2.0, "backend": "sglang", "dataset": "sharegpt"}, "random-ids"),
        ({"arrival": "uniform", "request_rate": 2.0}, "poisson"),
    ],
)
def test_bad_arrivals_name_the_rule_and_the_fix(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        tiny_scenario("bad", **fields)


# ------------------------------------------------------------------ the real client


class Recorder:
    """The emulator's app behind a wrapper noting when each /generate request arrives."""

    def __init__(self, app: Any) -> None:
        self.app, self.arrivals = app, []  # type: ignore[var-annotated]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/generate":
            self.arrivals.append(time.monotonic())
        await self.app(scope, receive, send)


@pytest.fixture()
def recorded() -> Iterator[tuple[str, Recorder]]:
    import uvicorn

    from kimi_runbooks.emulator.app import create_app
    from kimi_runbooks.emulator.latency import LatencyProfile
    from kimi_runbooks.emulator.settings import EmulatorSettings

    settings = EmulatorSettings(profile=LatencyProfile(ttft_base_ms=5, ttft_per_1k_input_ms=0, itl_base_ms=2))
    recorder = Recorder(create_app(settings))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(recorder, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}", recorder
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def _gaps(recorder: Recorder, n: int) -> list[float]:
    times = recorder.arrivals[-n:]  # the measured requests (the warm-up came first)
    return [b - a for a, b in zip(times, times[1:])]


@pytest.mark.heavy
def test_constant_arrivals_are_evenly_spaced_and_poisson_ones_are_not(
    require_tool_env, recorded: tuple[str, Recorder], tmp_path: Path
) -> None:
    from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer

    env = require_tool_env("bench")
    url, recorder = recorded
    tokenizer = make_offline_tokenizer(tmp_path / "tokenizer", env=env)
    common = {"input_len": 200, "output_len": 4, "num_prompts": 16, "request_rate": 8.0, "backend": "sglang"}
    constant = tiny_scenario("arrive-constant", arrival="constant", max_concurrency=None, **common)
    poisson = tiny_scenario("arrive-poisson", arrival="poisson", max_concurrency=None, **common)
    handle = RunHandle(base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", emulated=True)
    options: dict[str, Any] = {"tokenizer": tokenizer, "offline": True, "verify_tokens": False, "answer_probe": 0}
    gaps = {}
    for scenario in (constant, poisson):
        speed.run_scenarios(
            [scenario], handle, RunFolder.create(tmp_path / "run"), progress=False, timeout_s=300, **options
        )
        gaps[scenario.arrival] = _gaps(recorder, scenario.num_prompts)
    rows = {r["scenario"]: r for r in read_jsonl(tmp_path / "run" / "bench.jsonl")}
    assert all(r["status"] == "ok" for r in rows.values()), [r.get("error") for r in rows.values()]
    assert rows["arrive-constant"]["metrics"]["completed"] == 16
    even, random_ = gaps["constant"], gaps["poisson"]
    cv = {k: statistics.pstdev(v) / statistics.mean(v) for k, v in gaps.items()}
    off_grid = max(abs(sum(even[:k]) - k / 8.0) for k in range(len(even) + 1)) * 8.0  # in gaps
    print({"mean_gap_s": {k: statistics.mean(v) for k, v in gaps.items()}, "cv": cv, "off_grid": off_grid})
    assert statistics.mean(even) == pytest.approx(1 / 8.0, rel=0.1)  # 8 requests/s
    assert off_grid < 0.5  # each request within half a gap of its slot k / rate: evenly spaced
    assert cv["constant"] < 0.25  # what is left is the client's own lag (it tokenizes each prompt)
    assert cv["poisson"] > 0.4  # exponential gaps have a coefficient of variation of 1
    assert max(random_) > 2 * min(random_)
