"""Stages report progress into the run folder; the runbook relays it live, rate-limited."""

from __future__ import annotations

import time

from kimi_runbooks.progress import ProgressRelay, report_progress
from kimi_runbooks.rundir import RunFolder


def test_relay_prints_milestones_and_rate_limits_counters(tmp_path) -> None:
    folder = RunFolder.create(tmp_path / "run")
    lines: list[str] = []
    with ProgressRelay(folder, printer=lines.append, interval_s=0.05):
        report_progress(folder, "speed", "scenario 1/2 a: started", milestone=True)
        for done in range(1, 40):
            report_progress(folder, "speed", f"a: {done}/40 requests", key="a")
        report_progress(folder, "speed", "a: ok in 1.0 s", milestone=True)
        time.sleep(0.3)
    assert lines[0] == "[runbook] speed: scenario 1/2 a: started"
    assert "[runbook] speed: a: ok in 1.0 s" in lines
    counters = [line for line in lines if "requests" in line]
    assert 1 <= len(counters) <= 3  # not 39 lines: one per interval per key, and the last one


def test_no_run_folder_is_a_no_op(tmp_path) -> None:
    report_progress(None, "invoke", "x")
    report_progress(RunFolder(tmp_path / "missing"), "invoke", "x")
    assert not (tmp_path / "missing").exists()


def test_in_jupyter_a_widget_shows_stages_done_and_the_latest_event(tmp_path) -> None:
    """The runbook's bar (ipywidgets): stages done of all, the relayed event beside it; outside a
    kernel there is no widget, only lines."""
    import ipywidgets

    from kimi_runbooks.progress import StageBar, stage_bar

    assert stage_bar(4) is None  # pytest is not a Jupyter kernel
    bar = StageBar(4, ipywidgets)
    folder = RunFolder.create(tmp_path / "run")
    bar.stage("speed", 2)
    with ProgressRelay(folder, printer=lambda line: None, interval_s=0.05, bar=bar):
        report_progress(folder, "speed", "a: 3/8 requests <fast>", milestone=True)
        time.sleep(0.3)
    assert bar.bar.value == 2 and bar.bar.max == 4
    assert bar.label.value == "speed: a: 3/8 requests &lt;fast&gt;"  # escaped: the label is HTML
    bar.stage("speed", 3, "ok")
    assert bar.bar.value == 3 and bar.label.value == "speed: ok"


def test_the_widget_prints_a_short_line_where_only_text_is_shown() -> None:
    """papermill's log and nbconvert show text/plain: one plain sentence, not the widget's repr."""
    import ipywidgets

    from kimi_runbooks.progress import StageBar

    data = StageBar(3, ipywidgets).bundle()
    assert "application/vnd.jupyter.widget-view+json" in data  # Jupyter still draws the widget
    assert "HBox" not in data["text/plain"] and "IntProgress" not in data["text/plain"]


def test_latest_count_is_the_last_tqdm_counter_in_the_logs_tail(tmp_path):
    from kimi_runbooks.progress import latest_count

    log = tmp_path / "tool.log"
    assert latest_count(log) is None  # the tool has not opened its log yet
    log.write_text("warm-up\n" + "x" * 5000 + "\r  3/10 [00:01<00:02]\r  7/10 [00:02<00:01]")
    assert latest_count(log) == (7, 10)
    log.write_text("  1/10 [" + "y" * 5000)
    assert latest_count(log) is None  # only the tail is read, never the whole log
    assert latest_count(log, tail_bytes=6000) == (1, 10)
