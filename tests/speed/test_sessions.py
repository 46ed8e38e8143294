"""Multi-round mooncake sessions and think time between turns (speed/sessions.py and
tools/scripts/session_replay.py, issue 42 item 5): mooncake replay was one round per session and
no trace had a pause between a reply and the next turn."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from kimi_runbooks.catalog import Scenario, ThinkTime, TraceDesign
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed import argv as bench_argv
from kimi_runbooks.speed.sessions import applied, draw_ms, mooncake_sessions, with_think_time
from kimi_runbooks.speed.traces import check_trace, mooncake_trace, prepare_trace
from kimi_runbooks.tools.scripts import session_replay

DESIGN = TraceDesign(conversations=3, turns=4, system_tokens=1300, first_tokens=260, turn_tokens=260, output_len=16)
TRACE = Path(__file__).parent.parent / "fixtures" / "traces" / "mooncake_sessions.jsonl"


def _scenario(**update: Any) -> Scenario:
    base = {
        "id": "moon",
        "dataset": "mooncake",
        "num_prompts": 3,
        "max_concurrency": 2,
        "seed": 7,
        "backend": "sglang-oai-chat",
        "trace": DESIGN,
    }
    return Scenario.model_validate({**base, **update})


def test_a_generated_mooncake_trace_has_multi_round_sessions():
    rows = mooncake_trace(DESIGN, seed=1)
    assert len(rows) == 3 * 4
    s0 = [r for r in rows if r["session_id"] == "s0"]
    assert len(s0) == 4 and "timestamp" in s0[0] and all("timestamp" not in r for r in s0[1:])
    for before, after in zip(s0, s0[1:]):  # each round's prompt starts with the previous one's
        assert after["hash_ids"][: len(before["hash_ids"])] == before["hash_ids"]
        assert after["input_length"] > before["input_length"]
    assert rows[0]["hash_ids"][:10] == rows[4]["hash_ids"][:10]  # the shared prefix across sessions
    single = mooncake_trace(DESIGN.model_copy(update={"turns": 1}))
    assert len(single) == 3 and all("session_id" not in r for r in single)  # bench_serving's one round


def test_sessions_replay_new_blocks_per_round_with_their_own_lengths_and_times():
    rows = [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]
    doc = check_trace(mooncake_sessions(rows, str(TRACE)), "converted")
    by_len = sorted(len(c) for c in doc["conversations"])
    assert by_len == [1, 2, 3]  # a one-row session, and sessions of 2 and 3 rounds, in file order
    three = next(c for c in doc["conversations"] if len(c) == 3)
    first, second = three[0]["messages"][0]["content"], three[1]["messages"][0]["content"]
    assert first.count(" hi") == 2 * 127 and second.startswith("Round 2: ") and second.count(" hi") == 127
    other = next(c for c in doc["conversations"] if len(c) == 2)[0]["messages"][0]["content"]
    assert first[: len("1hi hi")] == other[: len("1hi hi")]  # hash id 1 leads both: a shared prompt prefix
    assert [t.get("output_len") for t in three] == [12, 8, 10]
    assert three[1]["delay"] == 1500.0 and three[2]["timestamp"] == 6000.0 and three[0]["timestamp"] == 1000.0


def test_think_time_comes_from_a_named_distribution_on_the_emulators_clock():
    doc = mooncake_sessions(mooncake_trace(DESIGN, seed=1))
    think = ThinkTime(distribution="exponential", mean_ms=2000)
    timed = with_think_time(doc, think, seed=3, time_scale=0.05)
    delays = [t["delay"] for c in timed["conversations"] for t in c[1:]]
    assert len(delays) == 3 * 3 and all(d >= 0 for d in delays) and len(set(delays)) > 1
    assert timed == with_think_time(doc, think, seed=3, time_scale=0.05)  # the seed decides the draws
    assert all("delay" not in c[0] for c in timed["conversations"])  # no pause before a session's first turn
    assert [c[0]["timestamp"] for c in timed["conversations"]] == [
        round(c[0]["timestamp"] * 0.05, 3) for c in doc["conversations"]
    ]
    meta = timed["metadata"]["think_time"]
    assert meta["drawn_turns"] == 9 and meta["time_scale"] == 0.05
    assert sum(delays) == pytest.approx(0.05 * meta["drawn_mean_ms"] * 9, rel=1e-3)


def test_a_traces_own_delays_win_over_the_distribution():
    rows = [json.loads(line) for line in TRACE.read_text().splitlines() if line.strip()]
    timed = with_think_time(mooncake_sessions(rows), ThinkTime(distribution="constant", mean_ms=999), 0, 0.5)
    three = next(c for c in timed["conversations"] if len(c) == 3)
    assert three[1]["delay"] == 750.0 and "delay" not in three[2] and three[2]["timestamp"] == 3000.0
    two = next(c for c in timed["conversations"] if len(c) == 2)
    assert two[1]["delay"] == 999 * 0.5  # no time of its own: the distribution's


@pytest.mark.parametrize("name", ["constant", "normal", "exponential"])
def test_each_distribution_has_the_mean_it_names(name):
    import random

    rng = random.Random(0)
    think = ThinkTime(distribution=name, mean_ms=1000, stddev_ms=200)
    draws = [draw_ms(think, rng) for _ in range(4000)]
    assert sum(draws) / len(draws) == pytest.approx(1000, rel=0.06) and min(draws) >= 0


def test_multi_round_mooncake_needs_the_chat_backend_and_think_time_a_session():
    with pytest.raises(ValidationError, match="mooncake-sessions-need-chat"):
        _scenario(backend="sglang")
    with pytest.raises(ValidationError, match="think_time pauses between the turns"):
        Scenario(
            id="r",
            dataset="random",
            input_len=8,
            output_len=8,
            num_prompts=2,
            think_time={"distribution": "constant", "mean_ms": 5},
        )
    assert _scenario(backend="sglang", trace=DESIGN.model_copy(update={"turns": 1})).backend == "sglang"


def test_the_speed_stage_replays_mooncake_sessions_through_the_multi_turn_path(tmp_path):
    folder = RunFolder.create(tmp_path / "run")
    scenario = _scenario(think_time={"distribution": "constant", "mean_ms": 2000})
    path, doc = prepare_trace(scenario, folder, None, time_scale=0.05)
    assert path.name.endswith(".sessions.json") and json.loads(path.read_text()) == doc
    assert all(t["delay"] == 100.0 for c in doc["conversations"] for t in c[1:])
    argv = bench_argv.build_argv(
        scenario,
        SimpleNamespace(base_url="http://x"),
        output_file="o",
        client=bench_argv.BenchClient(dataset_path=path),
    )
    assert argv[argv.index("--dataset-name") + 1] == "agentic-trace"
    assert argv[argv.index("--backend") + 1] == "sglang-oai-chat"
    assert argv[argv.index("--sharegpt-output-len") + 1] == "16"
    own = prepare_trace(scenario.model_copy(update={"trace": None}), folder, TRACE, time_scale=1.0)
    assert own is not None and len(own[1]["conversations"]) == 3  # a user's local mooncake file, as sessions


# ------------------------------------------------------------------- the replay inside bench_serving


@dataclasses.dataclass
class _Input:
    prompt: Any
    output_len: int


class _FakeServing:
    """What session_replay patches, as SGLang 0.5.23's benchmark/serving.py has it: the multi-turn
    wrapper appends each reply to the history; get_request yields the rows."""

    def __init__(self) -> None:
        self.sent: list[tuple[float, int, int]] = []  # (clock, rounds so far, output_len)

    def wrap_multi_turn_request_func(self, request_func, backend):
        async def f(request_func_input, pbar=None):
            history, outputs = [], []
            for messages in request_func_input.prompt:
                history.extend(messages)
                out = await request_func(dataclasses.replace(request_func_input, prompt=list(history)), pbar=pbar)
                history.append({"role": "assistant", "content": out})
                outputs.append(out)
            return outputs

        return f

    async def get_request(self, input_requests, request_rate):
        for row in input_requests:
            yield row


def _replay(doc: dict, tmp_path: Path, virtual: bool = True) -> tuple[_FakeServing, session_replay.Replay]:
    """Run `doc` through the patched fake: on a virtual clock (one conversation at a time: each sleep
    and each 250 ms reply moves it), or on the real one (replies of 20 ms) for concurrent sessions."""
    path = tmp_path / "sessions.json"
    path.write_text(json.dumps(doc))
    serving = _FakeServing()
    now = [0.0]

    async def sleep(seconds: float) -> None:
        now[0] += seconds

    async def request_func(request_func_input, pbar=None):
        rounds = sum(1 for m in request_func_input.prompt if m.get("role") == "assistant")
        serving.sent.append((now[0] if virtual else time.monotonic(), rounds, request_func_input.output_len))
        if virtual:
            now[0] += 0.25
        else:
            await asyncio.sleep(0.02)
        return f"reply {rounds}"

    args = ["--dataset-name", "agentic-trace", "--dataset-path", str(path)]
    rows = [SimpleNamespace(prompt=[t["messages"] for t in c]) for c in doc["conversations"]]

    async def bench() -> None:
        wrapped = serving.wrap_multi_turn_request_func(request_func, "sglang-oai-chat")
        await wrapped(_Input(rows[0].prompt, 5))  # bench_serving's warm-up, before the measured run
        serving.sent.clear()
        tasks = []
        async for row in serving.get_request(rows, float("inf")):
            tasks.append(asyncio.create_task(wrapped(_Input(row.prompt, 5))))
        await asyncio.gather(*tasks)

    with session_replay.installed(serving, args) as replay:
        assert replay is not None
        if virtual:
            replay.clock, replay.sleep = (lambda: now[0]), sleep
        asyncio.run(bench())
    return serving, replay


def test_rounds_wait_their_think_time_in_order_with_their_own_lengths(tmp_path, capsys):
    doc = {
        "conversations": [
            [
                {"messages": [{"role": "user", "content": "a"}], "output_len": 12},
                {"messages": [{"role": "user", "content": "b"}], "delay": 1000, "output_len": 8},
                {"messages": [{"role": "user", "content": "c"}], "delay": 500},
            ]
        ]
    }
    serving, replay = _replay(doc, tmp_path)
    t0 = serving.sent[0][0]
    assert t0 == 0.75  # the warm-up's three rounds (250 ms each) did not pause
    assert [(t - t0, k, n) for t, k, n in serving.sent] == [(0.0, 0, 12), (1.25, 1, 8), (2.0, 2, 5)]
    assert (replay.waits, replay.waited_s) == (2, 1.5)
    assert applied(capsys.readouterr().out) == {"waits": 2, "waited_s": 1.5, "timed_starts": 0}


def test_timestamps_start_sessions_and_place_their_rounds(tmp_path):
    doc = {
        "conversations": [
            [
                {"messages": [{"role": "user", "content": "late"}], "timestamp": 1000},
                {"messages": [{"role": "user", "content": "x"}], "timestamp": 1600},
            ],
            [{"messages": [{"role": "user", "content": "early"}], "timestamp": 400}],
        ]
    }
    serving, replay = _replay(doc, tmp_path, virtual=False)
    early, late = sorted(t for t, rounds, _ in serving.sent if rounds == 0)
    assert late - early == pytest.approx(0.6, abs=0.1)  # started as far apart as their timestamps
    second_round = next(t for t, rounds, _ in serving.sent if rounds == 1)
    assert second_round - late == pytest.approx(0.6, abs=0.1)  # its session's first send + (1600 - 1000) ms
    assert replay.timed_starts == 2 and replay.waits == 1


def test_a_trace_without_times_is_left_to_bench_serving(tmp_path):
    path = tmp_path / "plain.json"
    path.write_text(json.dumps({"conversations": [[{"messages": [{"role": "user", "content": "a"}]}]]}))
    serving = _FakeServing()
    original = serving.wrap_multi_turn_request_func
    with session_replay.installed(serving, ["--dataset-name", "agentic-trace", "--dataset-path", str(path)]) as r:
        assert r is None and serving.wrap_multi_turn_request_func == original


def test_without_the_worker_a_timed_replay_runs_through_session_replay(monkeypatch, tmp_path):
    from kimi_runbooks.speed import bench_process

    seen: list[list[str]] = []
    monkeypatch.setattr(bench_process, "run_child", lambda folder, argv, *a, **k: (seen.append(argv), (0, False))[1])
    run = SimpleNamespace(worker=None, python="py", folder=None, child_env={})
    argv = ["py", "-m", bench_argv.BENCH_MODULE, "--dataset-name", "agentic-trace"]
    bench_process.execute(run, argv, tmp_path / "log", 10.0, "s", sessions=True)
    bench_process.execute(run, argv, tmp_path / "log", 10.0, "s", sessions=False)
    assert seen[0] == ["py", str(session_replay.__file__), "--dataset-name", "agentic-trace"]
    assert seen[1] == argv
