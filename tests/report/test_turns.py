"""Per-turn figures of a trace scenario, from synthetic result rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from kimi_runbooks.report.turns import MIN_TURNS, turn_figures
from kimi_runbooks.speed.timescale import rescale


def _turns(n: int, hits: bool = True) -> list[dict[str, Any]]:
    return [
        {
            "turn": k,
            "requests": 4,
            "mean_context_tokens": 1000.0 + 400 * k,
            "median_ttft_ms": 20.0 + 3 * k,
            "cache_hit_rate": round(0.7 * k / (k + 1), 4) if hits else None,
            "tok_s_per_user": 50.0,
        }
        for k in range(n)
    ]


def _rows(**turns: list[dict[str, Any]] | None) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"scenario": sid, "status": "ok", "emulated": True, "median_ttft_ms": 10.0, "turns": t}
            for sid, t in turns.items()
        ]
    )


def test_ttft_against_context_and_hit_rate_per_turn_are_drawn_and_labelled() -> None:
    figures, notes = turn_figures(_rows(agentic=_turns(6)), emulated=True, run_id="r1")
    assert notes == [] and len(figures) == 1
    fig = figures[0]
    ttft, hit = fig.data
    assert list(ttft.x) == [1000.0 + 400 * k for k in range(6)] and list(ttft.y) == [20.0 + 3 * k for k in range(6)]
    assert list(hit.x) == list(range(6)) and hit.y[-1] == round(0.7 * 5 / 6, 4)
    title = fig.layout.title.text
    assert "EMULATED (run r1)" in title and "agentic" in title
    assert "20 ms at 1000 tokens" in title and "35 ms at 3000" in title and "58%" in title
    assert all("EMULATED" in trace.name for trace in fig.data)


def test_a_measured_run_says_measured_and_a_rescaled_one_says_so() -> None:
    measured = _rows(agentic=_turns(4)).assign(emulated=False)
    fig = turn_figures(measured, emulated=False, run_id="hw7")[0][0]
    assert "measured (run hw7)" in fig.layout.title.text and "EMULATED" not in fig.layout.title.text
    rescaled = rescale(_rows(agentic=_turns(4)), 0.05)
    fig = turn_figures(rescaled, emulated=True, run_id="e1")[0][0]
    assert "rescaled to time scale 1" in fig.layout.title.text
    assert list(fig.data[0].y) == [(20.0 + 3 * k) / 0.05 for k in range(4)]  # the figure shows the rescaled turns


def test_too_few_turns_is_a_note_not_a_curve_of_zeros() -> None:
    few = _turns(MIN_TURNS - 1)
    broken = _turns(5)
    for t in broken[1:]:
        t["median_ttft_ms"] = None  # every later turn failed: one usable point
    figures, notes = turn_figures(_rows(short=few, failed=broken), emulated=True, run_id="r1")
    assert figures == []
    assert len(notes) == 2 and notes[0].startswith("short: per-turn figure not drawn: 2 turn(s)")
    assert notes[1].startswith("failed: per-turn figure not drawn: 1 turn(s)")


def test_no_cached_tokens_leaves_the_hit_rate_undrawn_instead_of_zero() -> None:
    fig = turn_figures(_rows(agentic=_turns(4, hits=False)), emulated=True, run_id="r1")[0][0]
    assert len(fig.data) == 1  # TTFT only
    assert any("hit rate not drawn" in a.text for a in fig.layout.annotations)
    assert "cache hit rate" not in fig.layout.title.text


def test_rows_without_turns_or_not_ok_give_nothing() -> None:
    plain = pd.DataFrame([{"scenario": "chat", "status": "ok", "median_ttft_ms": 1.0}])
    assert turn_figures(plain, emulated=False, run_id="r") == ([], [])
    failed = _rows(agentic=_turns(5)).assign(status="failed")
    assert turn_figures(failed, emulated=True, run_id="r") == ([], [])
    mixed = _rows(agentic=_turns(5), chat=None)
    figures, notes = turn_figures(mixed, emulated=True, run_id="r")
    assert len(figures) == 1 and notes == []
    assert turn_figures(None, emulated=True, run_id="r") == ([], [])


def test_a_bench_jsonl_row_reaches_the_report_rescaled(tmp_path) -> None:
    """turns and the first-answer probe survive bench.jsonl, the rescale and the speed section."""
    from kimi_runbooks.report import sections
    from kimi_runbooks.report.collect import RunData
    from kimi_runbooks.speed.results import RESULTS_FILE, load_results
    from tests.support import append_jsonl

    row = {
        "scenario": "agentic",
        "status": "ok",
        "emulated": True,
        "metrics": {"median_ttft_ms": 2.0, "completed": 12},
        "turns": _turns(4),
        "first_answer": {"median_first_answer_ms": 4.0, "median_first_reasoning_ms": 1.0, "requests": 3},
        "median_first_answer_ms": 4.0,
        "median_first_reasoning_ms": 1.0,
    }
    append_jsonl(tmp_path / RESULTS_FILE, row)
    speed = rescale(load_results(tmp_path), 0.05)
    data = RunData(tmp_path, "e1", {}, None, [], None, {"emulated": True}, None, speed, None, {})
    html = sections.speed_section(data)
    assert "first answer token p50 (ms)" in html and "80" in html  # 4 ms at time scale 0.05
    figures, _ = turn_figures(data.speed, data.emulated, data.run_id)
    assert list(figures[0].data[0].y) == [(20.0 + 3 * k) / 0.05 for k in range(4)]


def test_show_speed_shows_the_per_turn_figure_and_the_notes(monkeypatch) -> None:
    import plotly.graph_objects as go

    from kimi_runbooks.report import show
    from kimi_runbooks.report.collect import RunData

    shown: list[str] = []
    monkeypatch.setattr(go.Figure, "show", lambda self, *a, **k: shown.append(self.layout.title.text))
    monkeypatch.setattr(show, "_show_html", lambda body: shown.append(body))
    speed = _rows(agentic=_turns(5), short=_turns(1))
    data = RunData(Path("."), "e1", {}, None, [], None, {"emulated": True}, None, speed, None, {})
    show.show_speed(data)
    assert any("agentic, per turn of the trace replay: EMULATED" in s for s in shown)
    assert any("Per turn: short: per-turn figure not drawn" in s for s in shown)
