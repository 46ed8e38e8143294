"""The operating-point search (speed/operating_point.py): bisection over a fake runner, the scenario's
search block and its errors, resumption, failed probes, and the stage's own runner with the fake client."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.catalog.scenario_models import SearchSpec
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed import operating_point as op
from kimi_runbooks.speed.knee import sweep_values
from kimi_runbooks.target.locate import RunHandle
from tests.support import FAKE_BENCH, tiny_scenario


def _searched(low: float = 1, high: float = 64, step: float = 1, **search: Any) -> Scenario:
    """A search block; the bisection alone (no knee sweep, no confirmation) unless `search` asks."""
    spec = {"over": "max_concurrency", "low": low, "high": high, "step": step}
    spec |= {"knee_sweep": False, "confirm_repeats": 0, **search}
    return tiny_scenario("op", slo={"tpot_ms": 40.0}, max_concurrency=None, search=spec)


def _fake_runner(limit: float, calls: list[float], fail: set[float] | None = None) -> Any:
    """A runner whose probes meet the SLO up to `limit` (attainment 1.0, else 0.5); `fail` probes error."""

    def run_probe(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        value = tag["value"]
        calls.append(value)
        row: dict[str, Any] = {"scenario": probe.id, "search": tag, "max_concurrency": probe.max_concurrency}
        if fail and value in fail:
            return {**row, "status": "failed", "error": "ConnectionError: server gone (fake)"}
        return {**row, "status": "ok", "goodput": {"slo_attainment": 1.0 if value <= limit else 0.5}}

    return run_probe


def test_grid_ends_at_high_and_keeps_the_step() -> None:
    assert op.grid(_searched(1, 10, 4).search) == [1, 5, 9, 10]  # type: ignore[arg-type]
    assert op.grid(_searched(2, 8, 2).search) == [2, 4, 6, 8]  # type: ignore[arg-type]


@pytest.mark.parametrize("step", [1, 2, 5])
def test_bisection_finds_the_highest_value_meeting_the_slo_within_one_step(step: int) -> None:
    for limit in range(1, 64):
        calls: list[float] = []
        found = op.search(_searched(1, 64, step), _fake_runner(limit, calls))
        grid = op.grid(_searched(1, 64, step).search)  # type: ignore[arg-type]
        expected = max(v for v in grid if v <= limit)
        assert found.best == expected, (limit, step, found.probes)
        assert limit - step < found.best <= limit
        assert found.above is not None and found.above - found.best <= step
        assert len(calls) == len(set(calls)) <= math.ceil(math.log2(len(grid))) + 2  # no value probed twice


def test_the_edges_of_the_bracket_are_said() -> None:
    calls: list[float] = []
    none = op.search(_searched(4, 32, 4), _fake_runner(2, calls))
    assert none.best is None and calls == [4] and "lowest value (4)" in none.note
    calls.clear()
    top = op.search(_searched(4, 32, 4), _fake_runner(100, calls))
    assert top.best == 32 and top.above is None and calls == [4, 32] and "may be higher" in top.note


def test_a_failed_probe_is_recorded_and_counts_as_not_met() -> None:
    calls: list[float] = []
    found = op.search(_searched(1, 16, 1), _fake_runner(12, calls, fail={8}))
    failed = [p for p in found.probes if p.status == "failed"]
    assert [p.value for p in failed] == [8] and "server gone" in failed[0].why
    assert found.best is not None and found.best < 8  # the search went on below the failure


def test_a_rerun_reuses_finished_probes_and_retries_failed_ones() -> None:
    first: list[float] = []
    rows: list[dict[str, Any]] = []

    def recording(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = _fake_runner(12, first, fail={8})(probe, tag)
        rows.append(row)
        return row

    op.search(_searched(1, 16, 1), recording)
    again: list[float] = []
    second = op.search(_searched(1, 16, 1), _fake_runner(12, again), previous=rows)
    assert again == [8, 12, 14, 13]  # only the failed probe is run again, then the bisection goes on
    assert second.best == 12
    assert [p.reused for p in second.probes[:2]] == [True, True]
    other_slo = tiny_scenario("op", slo={"tpot_ms": 30.0}, max_concurrency=None, search=_searched().search)
    fresh: list[float] = []
    op.search(other_slo, _fake_runner(12, fresh), previous=rows)  # another SLO: nothing reused
    assert fresh[:2] == [1, 64]


def test_a_statistic_criterion_reads_bench_servings_metric_on_the_models_clock() -> None:
    scenario = _searched(criterion="p99")
    tag = op.search_tag(scenario, time_scale=0.5)
    row = {"status": "ok", "search": tag, "metrics": {"p99_tpot_ms": 19.0}}  # 38 ms at time scale 1
    assert op.judge(row) == (True, "p99 tpot_ms 38.0 <= 40")
    assert op.judge({**row, "metrics": {"p99_tpot_ms": 21.0}})[0] is False
    assert "no p99_tpot_ms" in op.judge({**row, "metrics": {}})[1]


def test_probes_carry_the_value_and_enough_prompts() -> None:
    scenario = _searched(prompts_per_value=3)
    probe = op.probe_scenario(scenario, 8)
    assert (probe.id, probe.max_concurrency, probe.num_prompts, probe.search) == ("op@c8", 8, 29, None)  # >= 29
    rate = tiny_scenario(
        "r", slo={"ttft_ms": 500.0}, search={"over": "request_rate", "low": 0.5, "high": 4, "step": 0.5}
    )
    assert op.probe_scenario(rate, 1.5).id == "r@r1.5" and op.probe_scenario(rate, 1.5).request_rate == 1.5


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"slo": None}, "operating-point-needs-slo"),
        ({"search": {"over": "max_concurrency", "low": 8, "high": 4, "step": 1}}, "not below search.high"),
        ({"search": {"over": "max_concurrency", "low": 1, "high": 4, "step": 8}}, "wider than the bracket"),
        ({"search": {"over": "max_concurrency", "low": 1, "high": 4.5, "step": 1}}, "whole numbers"),
        ({"max_concurrency": 4}, "remove max_concurrency"),
        ({"search": {"over": "max_concurrency", "low": 1, "high": 4, "step": 1, "metrics": ["ttft_ms"]}}, "not in slo"),
        ({"search": {"over": "max_concurrency", "low": 1, "high": 4, "step": 1, "criterion": "p50"}}, "criterion"),
    ],
)
def test_a_bad_search_block_names_the_rule_and_the_fix(fields: dict[str, Any], says: str) -> None:
    base = {"slo": {"tpot_ms": 40.0}, "max_concurrency": None, "search": _searched().search}
    with pytest.raises(ValidationError, match=says):
        tiny_scenario("bad", **(base | fields))


def test_summaries_rebuild_the_outcome_from_the_rows_and_call_a_non_monotone_one() -> None:
    rows: list[dict[str, Any]] = []
    found = op.search(_searched(1, 32, 1), lambda p, t: rows.append(_fake_runner(9, [])(p, t)) or rows[-1])
    (summary,) = op.summaries(rows)
    assert (summary.best, summary.above, summary.note) == (found.best, found.above, "")
    tag = rows[0]["search"]
    odd = [
        *rows,
        {"scenario": "op@c3", "status": "ok", "search": {**tag, "value": 3}, "goodput": {"slo_attainment": 0}},
    ]
    assert "not monotone" in op.summaries(odd)[0].note


# ------------------------------------------------------------------ through the stage's runner


@pytest.fixture(scope="module")
def server() -> Any:
    base_url, stop = run_in_thread(EmulatorSettings(port=0, profile=LatencyProfile(), startup_seconds=0))
    yield base_url
    stop()


def test_the_stage_runs_each_probe_as_a_row_and_resumes(server: str, tmp_path: Path) -> None:
    """The fake client's median TPOT is 10 + 0.5 x concurrency: a median TPOT SLO of 20 ms holds up to
    concurrency 20. Each probe is a bench.jsonl row; the failed one is kept; a rerun runs only it."""
    argv_log = tmp_path / "argv.jsonl"
    scenario = tiny_scenario(
        "opt",
        slo={"tpot_ms": 20.0},
        max_concurrency=None,
        search={"over": "max_concurrency", "low": 1, "high": 48, "step": 1, "criterion": "median"}
        | {"knee_sweep": False, "confirm_repeats": 0},
    )
    settings: dict[str, Any] = {"offline": True, "command_prefix": FAKE_BENCH, "progress": False, "devices": 8}
    settings |= {"verify_tokens": False, "answer_probe": 0, "timeout_s": 60}
    handle = RunHandle(base_url=server, model="moonshotai/Kimi-K2.6", launcher="emulator")
    env = {"FAKE_BENCH_ARGV_LOG": str(argv_log), "FAKE_BENCH_FAIL": "opt@c24"}
    df = speed.run_scenarios([scenario], handle, RunFolder.create(tmp_path / "run"), env=env, **settings)
    rows = read_jsonl(tmp_path / "run" / "bench.jsonl")
    assert [r["scenario"] for r in rows][:3] == ["opt@c1", "opt@c48", "opt@c24"]
    assert {r["scenario"]: r["status"] for r in rows}["opt@c24"] == "failed"
    (summary,) = op.summaries(rows)
    assert summary.best == 20 and summary.above == 21
    assert set(df["scenario"]) == {r["scenario"] for r in rows}  # the search's rows are its probes
    with pytest.raises(speed.ScenariosFailed, match="opt@c24"):  # a failed probe fails the stage, as any scenario
        speed.raise_if_failed(df)
    assert op.base_of("opt@c24") == op.base_of("opt@r0.5") == "opt" and op.base_of("a@b") == "a@b"
    runs = len(argv_log.read_text().splitlines())
    speed.run_scenarios(
        [scenario],
        handle,
        RunFolder.create(tmp_path / "run"),
        env={"FAKE_BENCH_ARGV_LOG": str(argv_log)},
        **settings,
    )
    rerun = [json.loads(line)["argv"] for line in argv_log.read_text().splitlines()[runs:]]
    assert len(rerun) == 1 and "24" in rerun[0][rerun[0].index("--max-concurrency") + 1]
    assert op.summaries(read_jsonl(tmp_path / "run" / "bench.jsonl"))[0].best == 20


def test_a_searched_rate_is_on_the_models_clock() -> None:
    rate = tiny_scenario(
        "r",
        slo={"ttft_ms": 500.0},
        search={"over": "request_rate", "low": 0.5, "high": 4, "step": 0.5, "knee_sweep": False, "confirm_repeats": 0},
    )
    calls: list[float] = []
    sent: list[float] = []

    def run_probe(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        sent.append(float(probe.request_rate or 0))
        return _fake_runner(2, calls)(probe, tag)

    found = op.search(rate, run_probe, time_scale=0.05)
    assert found.best == 2 and sent[:2] == [0.5 / 0.05, 4 / 0.05]  # 20x faster emulator, 20x the rate


def test_rate_probes_without_a_concurrency_stay_out_of_the_per_sweep_goodput() -> None:
    """A request-rate probe has an SLO attainment but no max_concurrency: the per-sweep table (the
    highest concurrency meeting the SLO) skips it instead of failing on the missing number."""
    import pandas as pd

    rows = pd.DataFrame(
        [
            {"scenario": "op@r0.5", "max_concurrency": None, "slo_attainment": 1.0, "slo": "ttft_ms 1000"},
            {"scenario": "op@c4", "max_concurrency": 4, "slo_attainment": 1.0, "slo": "tpot_ms 40"},
            {"scenario": "op@c8", "max_concurrency": 8, "slo_attainment": 0.5, "slo": "tpot_ms 40"},
        ]
    )
    table = speed.sweep_goodput(rows)
    assert table["best concurrency meeting the SLO"].tolist() == [4]
    rows.loc[1, "emulator_behind"] = True  # c4 met only on the host's latencies: not judged, not the best
    table = speed.sweep_goodput(rows)
    assert table["best concurrency meeting the SLO"].isna().all()
    assert table["not judged (emulator behind)"].tolist() == ["4"]


# ------------------------------------------------------------------ issue 42: sizes, knee, confirmation


def test_probe_sizes_follow_the_order_statistic_rule_and_a_small_probe_is_not_met() -> None:
    """n >= ln(1 - 0.95) / ln(p): 5 for the median, 29 for 90% attainment, 59 for p95, 299 for p99."""
    assert [op.min_requests(c) for c in ("median", "p90", "p95", "p99", "mean")] == [5, 29, 59, 299, 30]
    assert op.min_requests("attainment", 0.9) == 29 and op.min_requests("attainment", 1.0) == 299
    scenario = _searched(prompts_per_value=2)
    assert op.probe_scenario(scenario, 6).num_prompts == 29  # not 12: 2 per unit of concurrency
    tag = op.search_tag(scenario)
    c6 = {"scenario": "op@c6", "status": "ok", "search": tag, "goodput": {"requests": 12, "slo_attainment": 11 / 12}}
    met, why = op.judge(c6)
    assert not met and "12 requests: too few to judge 90% attainment" in why and "= 29" in why
    assert op.judge({**c6, "goodput": {"requests": 29, "slo_attainment": 27 / 29}})[0]


def _plateau_runner(limit: float, knee: float, calls: list[tuple[float, str]]) -> Any:
    """Attainment 1.0 up to `limit` (else 0.5); output throughput 100 x value up to `knee`, flat above."""

    def run_probe(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        value = tag["value"]
        calls.append((value, tag.get("phase", "")))
        metrics = {"output_throughput": 100.0 * min(value, knee), "completed": 64}
        good = {"requests": 64, "slo_attainment": 1.0 if value <= limit else 0.5}
        repeat = {"repeat": tag.get("confirm") or 1, "repeats": tag.get("confirms") or 1}
        return {"scenario": probe.id, "search": tag, "status": "ok", "metrics": metrics, "goodput": good} | repeat

    return run_probe


def test_the_knee_sweep_doubles_from_one_stream_and_stops_where_throughput_stops_growing() -> None:
    calls: list[tuple[float, str]] = []
    rows: list[dict[str, Any]] = []
    runner = _plateau_runner(limit=40, knee=16, calls=calls)
    found = op.search(_searched(1, 64, 1, knee_sweep=True), lambda p, t: rows.append(runner(p, t)) or rows[-1])
    assert [v for v, phase in calls if phase == "sweep"] == [1, 2, 4, 8, 16, 32]  # +0% at 32: the knee is 16
    assert found.knee == 16 and found.best == 16 and "saturation knee at 16" in found.note
    assert [v for v, phase in calls if phase == "bisect"] == []  # nothing above the knee is searched
    (again,) = op.summaries(rows)  # c32 met the SLO too, but the report holds the point at the knee as well
    assert (again.best, again.knee, again.above, again.note) == (16, 16, None, found.note)


def test_the_sweep_leaves_the_bisection_only_the_bracket_where_the_slo_is_first_missed() -> None:
    calls: list[tuple[float, str]] = []
    found = op.search(_searched(1, 64, 1, knee_sweep=True), _plateau_runner(limit=20, knee=64, calls=calls))
    assert [v for v, phase in calls if phase == "sweep"] == [1, 2, 4, 8, 16, 32]
    assert found.best == 20 and found.above == 21 and found.knee is None
    assert all(16 < v < 32 for v, phase in calls if phase == "bisect")
    rate = {"over": "request_rate", "low": 0.25, "high": 4, "step": 0.25}
    assert sweep_values(op.grid(SearchSpec(**rate))) == [0.25, 0.5, 1, 2, 4]


def test_the_value_found_is_confirmed_by_fresh_runs_with_an_interval_or_stepped_down() -> None:
    """The bisection saw c20 meet the SLO; fresh runs there miss it (a cached bisection would not
    show this): the point steps down until three fresh runs all meet it, and says so."""
    calls: list[tuple[float, str]] = []
    plateau = _plateau_runner(limit=20, knee=64, calls=calls)

    def fresh_misses_above_18(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = plateau(probe, tag)
        if tag.get("confirm"):
            share = 0.5 if tag["value"] > 18 else [0.95, 0.97, 0.96][tag["confirm"] - 1]
            row["goodput"] = {"requests": 64, "slo_attainment": share}
        return row

    rows: list[dict[str, Any]] = []
    found = op.search(_searched(confirm_repeats=3), lambda p, t: rows.append(fresh_misses_above_18(p, t)) or rows[-1])
    assert found.best == 20 and found.confirmed == 18
    confirms = [(v, phase) for v, phase in calls if phase == "confirm"]
    assert confirms == [(20, "confirm"), (19, "confirm"), (18, "confirm"), (18, "confirm"), (18, "confirm")]
    stats = found.confirmation["statistics"]["slo_attainment"]
    assert stats["mean"] == pytest.approx(0.96) and stats["low"] < 0.96 < stats["high"] and stats["n"] == 3
    assert found.confirmation["note"].startswith("3 of 3 fresh runs at 18 met the SLO: slo_attainment 0.96 [")
    assert "reaches past the SLO" not in found.confirmation["note"]  # 0.96 +- 0.025 stays above 0.9
    wide = op.confirmation_of(18, [{**row, "goodput": {"slo_attainment": s}} for row, s in zip(rows[-3:], (0.9, 1, 1))])
    assert wide["confirmed"] and "the interval reaches past the SLO (slo_attainment 0.8232 < 0.9)" in wide["note"]
    (again,) = op.summaries(rows)  # the report rebuilds the same point from the rows
    assert again.confirmed == 18 and again.confirmation == found.confirmation
    assert op.base_of("op@c18~confirm") == "op"
    missing: list[dict[str, Any]] = []

    def fresh_always_miss(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = plateau(probe, tag)
        row["goodput"] = {"requests": 64, "slo_attainment": 0.5 if tag.get("confirm") else 1.0}
        missing.append(row)
        return row

    unconfirmed = op.search(_searched(1, 24, 1, confirm_repeats=3), fresh_always_miss)
    assert unconfirmed.best == 24 and unconfirmed.confirmed is None
    assert unconfirmed.confirmation["note"].endswith("(fresh runs missed at 24, 23, 22)")
    assert op.summaries(missing)[0].confirmation == unconfirmed.confirmation
    never = op.search(_searched(confirm_repeats=2), _plateau_runner(limit=0.5, knee=64, calls=[]))
    assert never.best is None and never.confirmed is None and never.confirmation == {}


BEHIND = {
    "behind": True,
    "late_share": 0.8,
    "suggested_time_scale": 0.25,
    "reason": "not representative: the emulator fell behind its latency model on 80% of its steps (fake)",
}
"""A probe row's emulator lag verdict when the host could not keep up (speed/emulator_lag.judge)."""


def _behind_above(limit: float, plateau: Any) -> Any:
    """The plateau runner, but every run above `limit` meets the SLO only because the emulator fell
    behind (attainment 1.0 with a lag verdict saying the latencies are the host's)."""

    def run_probe(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = plateau(probe, tag)
        if tag["value"] > limit:
            row["goodput"] = {"requests": 64, "slo_attainment": 1.0}
            row["emulator_lag"] = BEHIND
        return row

    return run_probe


def test_a_probe_the_emulator_fell_behind_on_is_neither_met_nor_missed() -> None:
    """A behind probe met its SLO on paper (the host's short token gaps): it is not judged, the search
    does not climb on it, and its verdict names it and the time scale to rerun at."""
    rows: list[dict[str, Any]] = []
    runner = _behind_above(12, _plateau_runner(limit=64, knee=64, calls=[]))
    found = op.search(_searched(1, 32, 1), lambda p, t: rows.append(runner(p, t)) or rows[-1])
    assert found.best == 12 and found.confirmed is None  # below the first value not judged, never above it
    unjudged = {p.value for p in found.unjudged}
    assert unjudged and min(unjudged) > 12 and all(p.met is None for p in found.unjudged)
    assert all(p.met is True for p in found.probes if p.value <= 12)
    assert all("not judged, not representative" in p.why and p.suggested_time_scale == 0.25 for p in found.unjudged)
    assert "not judged, not representative: the emulator fell behind its latency model" in found.note
    assert "Fix: rerun at time_scale 0.25 or above" in found.note
    assert "missed" not in found.note and "not monotone" not in found.note
    (again,) = op.summaries(rows)  # the report rebuilds the same verdict from the rows
    assert again.best == 12 and {p.value for p in again.unjudged} == unjudged
    assert again.unjudged_note() in again.note and "not monotone" not in again.note
    none = op.search(_searched(1, 32, 1), _behind_above(0, _plateau_runner(limit=64, knee=64, calls=[])))
    assert none.best is None and none.note.startswith("the lowest value (1) was not judged; 1 run(s) at")


def test_a_confirmation_the_emulator_fell_behind_on_is_not_representative_not_missed() -> None:
    """Fresh runs at the value found that the emulator fell behind on: not judged, no interval from
    them, and the value is not confirmed with the fix said (then a step below is tried, as for a miss)."""
    plateau = _plateau_runner(limit=64, knee=64, calls=[])

    def confirm_behind_above_10(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = plateau(probe, tag)
        if tag.get("confirm") and tag["value"] > 10:
            row["emulator_lag"] = BEHIND
        return row

    rows: list[dict[str, Any]] = []
    found = op.search(
        _searched(1, 12, 1, confirm_repeats=3), lambda p, t: rows.append(confirm_behind_above_10(p, t)) or rows[-1]
    )
    assert found.best == 12 and found.confirmed == 10
    behind = [p for p in found.probes if p.phase == "confirm" and p.value > 10]
    assert [p.value for p in behind] == [12] * (op.BEHIND_RETRIES + 1) + [11] * (op.BEHIND_RETRIES + 1)
    assert all(p.met is None for p in behind) and [p.value for p in behind if not p.rerun] == [12, 11]
    assert found.confirmation["note"].startswith("3 of 3 fresh runs at 10 met the SLO")
    assert "2 run(s) at max_concurrency 12, 11 not judged, not representative" in found.note  # said, not dropped
    at_12 = op.confirmation_of(12, [r for r in rows if r["scenario"] == "op@c12~confirm"][-1:])  # the last attempt
    assert at_12["confirmed"] is False and at_12["not_representative"] == 1 and at_12["statistics"] == {}
    assert at_12["suggested_time_scale"] == 0.25
    assert "0 of 1 fresh runs at 12 met the SLO (1 not judged: not representative" in at_12["note"]
    assert "Fix: rerun at time_scale 0.25 or above" in at_12["note"]
    (again,) = op.summaries(rows)
    assert again.confirmed == 10 and again.confirmation == found.confirmation


def test_a_probe_the_host_fell_behind_on_once_is_run_again_and_judged() -> None:
    """A moment of a busy host (CI's other tests took the cores) is not the host: a probe the emulator
    fell behind on is run again fresh, and the attempt that kept up decides (seen in CI: c3 behind
    once, the search stopped at c1 where the emulator's known limit is c13)."""
    plateau = _plateau_runner(limit=12, knee=64, calls=[])
    behind_once: set[str] = set()

    def run_probe(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        row: dict[str, Any] = plateau(probe, tag)
        if probe.id not in behind_once:  # every probe's first attempt falls behind
            behind_once.add(probe.id)
            row["emulator_lag"] = BEHIND
        return row

    rows: list[dict[str, Any]] = []
    found = op.search(_searched(1, 32, 1, confirm_repeats=2), lambda p, t: rows.append(run_probe(p, t)) or rows[-1])
    assert found.best == 12 and found.confirmed == 12 and not found.unjudged and "not judged" not in found.note
    retried = [p for p in found.probes if p.rerun]
    assert retried and all(p.met is None for p in retried)
    assert [r["search"].get("attempt") for r in rows if r["scenario"] == "op@c12"] == [None, 2]
    (again,) = op.summaries(rows)  # the last attempt of each probe stands in the report too
    assert again.best == 12 and again.confirmed == 12 and not again.unjudged


def test_judge_calls_a_behind_probe_not_representative_whatever_its_latencies() -> None:
    row = {"status": "ok", "search": {"criterion": "attainment", "attainment": 0.9, "slo": {"tpot_ms": 40.0}}}
    row["goodput"] = {"requests": 64, "slo_attainment": 1.0}
    assert op.judge(row)[0] and op.verdict(row) is True
    behind = {**row, "emulator_lag": BEHIND}
    assert op.verdict(behind) is None and op.judge(behind) == (False, f"not judged, {BEHIND['reason']}")
    kept_up = {**row, "emulator_lag": {**BEHIND, "behind": False}}
    assert op.verdict(kept_up) is True
    failed = {**behind, "status": "failed", "error": "boom"}
    assert op.verdict(failed) is False  # a failed probe is recorded as it is, behind or not


def test_a_search_whose_probes_failed_to_run_says_so_not_that_the_slo_was_missed() -> None:
    """A dead server is not a missed SLO: both the live search and the summary read from bench.jsonl
    name the failure (both said "did not meet the SLO" / "no probe met the SLO" before)."""
    calls: list[float] = []
    found = op.search(_searched(4, 32, 4), _fake_runner(100, calls, fail={4}))
    assert found.best is None and calls == [4]
    assert "lowest value (4) failed to run" in found.note and "server gone" in found.note
    tag = {"of": "op", "over": "max_concurrency", "slo": {"tpot_ms": 40.0}, "criterion": "attainment", "step": 4}
    dead = {
        "scenario": "op@c4",
        "status": "failed",
        "error": "ConnectionError: server gone",
        "search": tag | {"value": 4},
    }
    (summary,) = op.summaries([dead])
    assert summary.best is None and summary.note == "no probe ran to the end: 4 failed to run"
    missed = {"scenario": "op@c8", "status": "ok", "goodput": {"slo_attainment": 0.5}, "search": tag | {"value": 8}}
    (summary,) = op.summaries([dead, missed])
    assert summary.note == "no probe met the SLO (4 failed to run)"
