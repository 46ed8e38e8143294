"""The operating point in the report (report/frontier.py): every probe a point on the frontier, the chosen
one marked, one line per search, labelled like the other figures; too few probes are said, not drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kimi_runbooks.report.frontier import operating_point_lines, operating_points
from kimi_runbooks.rundir import read_jsonl
from kimi_runbooks.speed import load_results
from kimi_runbooks.speed import operating_point as op
from kimi_runbooks.speed.timescale import rescale
from tests.support import append_jsonl, tiny_scenario


def _run(
    tmp_path: Path, high: int = 32, fail: int | None = None, time_scale: float = 1.0, behind_from: int | None = None
) -> Path:
    """A run folder whose bench.jsonl holds the probes of a search (median TPOT 10 + 2 x concurrency);
    from `behind_from` up, the emulator fell behind its latency model (the row's lag verdict says so)."""
    scenario = tiny_scenario(
        "op",
        slo={"tpot_ms": 40.0},
        max_concurrency=None,
        search={"over": "max_concurrency", "low": 1, "high": high, "step": 1},
    )

    def run_probe(probe: Any, tag: dict[str, Any]) -> dict[str, Any]:
        c = int(tag["value"])
        tpot = 10 + 2 * c
        row: dict[str, Any] = {
            "scenario": probe.id,
            "search": tag,
            "max_concurrency": c,
            "emulated": True,
            "devices": 8,
            "repeat": tag.get("confirm") or 1,  # a confirmation run is repeat k, as run_one writes it
            "repeats": tag.get("confirms") or 1,
        }
        if c == fail:
            row |= {"status": "failed", "error": "ConnectionError (fake)", "metrics": {}}
        else:
            metrics = {"median_tpot_ms": tpot * time_scale, "output_throughput": c * 1000 / tpot / time_scale}
            row |= {"status": "ok", "metrics": metrics, "goodput": {"slo_attainment": 1.0 if tpot <= 40 else 0.2}}
        if behind_from is not None and c >= behind_from:
            row["emulator_lag"] = {"behind": True, "suggested_time_scale": 0.5, "reason": "not representative (fake)"}
        append_jsonl(tmp_path / "bench.jsonl", row)
        return row

    op.search(scenario, run_probe, time_scale=time_scale)
    return tmp_path


def test_every_probe_is_a_point_and_the_operating_point_is_marked(tmp_path: Path) -> None:
    run = _run(tmp_path, time_scale=0.1)
    speed = rescale(load_results(run), 0.1)
    figures, notes = operating_points(run, speed, emulated=True, run_id="r1")
    assert notes == [] and len(figures) == 1
    fig = figures[0]
    names = [t.name for t in fig.data]
    assert "operating point: max_concurrency 15" in names  # 10 + 2 x 15 = 40 ms, the last meeting 40
    probes = sum(len(t.x) for t in fig.data if t.name.startswith("probe"))
    searched = op.summaries(read_jsonl(run / "bench.jsonl"))[0].probes
    assert probes == len([p for p in searched if p.phase != "confirm"]) and len(searched) - probes == 3
    star = next(t for t in fig.data if t.name.startswith("operating point"))
    assert star.x[0] == 1000 / 40  # rescaled to time scale 1: 25 tok/s per user
    title = fig.layout.title.text
    assert "operating point max_concurrency 15 meets tpot_ms <= 40" in title and "EMULATED (run r1)" in title
    assert "rescaled to time scale 1" in title
    (line,) = operating_point_lines(run, speed, emulated=True, run_id="r1")
    assert "highest max_concurrency meeting it: 15 (next probe above, 16, missed)" in line
    confirmed = "operating point max_concurrency 15, confirmed: 3 of 3 fresh runs at 15 met the SLO: slo_attainment 1"
    assert confirmed in line
    assert "25.0 tok/s per user" in line and line.endswith("[EMULATED (run r1), rescaled to time scale 1]")


def test_a_failed_probe_is_named_not_drawn_at_zero(tmp_path: Path) -> None:
    run = _run(tmp_path, fail=16)
    speed = load_results(run)
    figures, _ = operating_points(run, speed, emulated=False, run_id="r2")
    xs = [x for t in figures[0].data for x in t.x]
    assert 0 not in xs and all(x == x for x in xs)
    (line,) = operating_point_lines(run, speed, emulated=False, run_id="r2")
    assert "failed: op@c16 (failed: ConnectionError (fake))" in line and "[measured (run r2)]" in line


def test_too_few_probes_are_said_not_drawn(tmp_path: Path) -> None:
    run = _run(tmp_path, high=2)  # probes 1 and 2 only
    figures, notes = operating_points(run, load_results(run), emulated=True, run_id=None)
    assert figures == []
    assert notes == [
        "op: frontier not drawn: 2 probe(s) with tok/s per user and per device, a frontier needs 3 "
        "(a wider bracket or a smaller step gives more)"
    ]


def test_a_run_without_a_search_has_no_line(tmp_path: Path) -> None:
    append_jsonl(tmp_path / "bench.jsonl", {"scenario": "a", "status": "ok", "metrics": {"median_tpot_ms": 5}})
    assert operating_point_lines(tmp_path, load_results(tmp_path), True, None) == []


def test_a_search_the_emulator_fell_behind_on_says_not_representative_not_missed(tmp_path: Path) -> None:
    """Every run from c1 up is behind: nothing is judged, so the line says NOT REPRESENTATIVE with the
    fix (never NOT CONFIRMED or "missed"), and the figure draws the probes as not judged."""
    run = _run(tmp_path, high=4, behind_from=1)
    speed = load_results(run)
    (line,) = operating_point_lines(run, speed, emulated=True, run_id="r3")
    assert "NOT CONFIRMED" not in line and "missed" not in line
    assert "no max_concurrency met it" in line and "no probe was judged" in line
    assert "not judged, not representative: the emulator fell behind its latency model" in line
    assert "Fix: rerun at time_scale 0.5 or above" in line
    (tmp_path / "partly").mkdir()
    partly = _run(tmp_path / "partly", high=32, behind_from=16)  # c16 up behind: confirmed below them
    (line,) = operating_point_lines(partly, load_results(partly), emulated=True, run_id="r4")
    assert "operating point max_concurrency 15, confirmed" in line and "16 not judged" in line
    assert "(next probe above, 16, not judged)" in line and "missed" not in line
    figures, _ = operating_points(partly, load_results(partly), emulated=True, run_id="r4")
    names = [t.name for t in figures[0].data]
    assert any(n.startswith("probe, not judged (emulator behind its latency model)") for n in names)


def test_a_search_whose_only_probe_failed_to_run_does_not_say_the_slo_was_missed(tmp_path: Path) -> None:
    run = _run(tmp_path, fail=1)  # the server died on the first probe: nothing above it ran
    (line,) = operating_point_lines(run, load_results(run), emulated=False, run_id="r5")
    assert "no max_concurrency ran to the end" in line and "no probe ran to the end: 1 failed to run" in line
    assert "met it" not in line and "did not meet" not in line
    figures, _ = operating_points(run, load_results(run), emulated=False, run_id="r5")
    assert figures == [] or figures[0].layout.title.text.startswith("no probe ran to the end")
