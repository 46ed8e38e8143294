"""The report: collection from a real emulated run folder, verdict, warnings, HTML export, compare.

The run folder is made by the stage modules themselves (deploy.launch on the emulator,
invoke.run_all, speed.run_scenarios with the fake bench_serving of tests/fake_bench), so the
report is tested against the files the stages really write.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from kimi_runbooks import report
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.perfmodel.beside_measured import PREDICTION_SOURCE
from kimi_runbooks.report import cli as report_cli
from kimi_runbooks.report import compare_runs as compare_runs_mod
from kimi_runbooks.report import html as report_html
from kimi_runbooks.report import sections
from kimi_runbooks.report import tables as report_tables
from kimi_runbooks.report.next_steps import next_steps
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import read_handle
from tests.support import FAKE_BENCH, append_jsonl

ROOT = REPO_ROOT


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    from kimi_runbooks import deploy, invoke, speed
    from kimi_runbooks.plan import plan

    folder = RunFolder.create(tmp_path_factory.mktemp("runs") / "h200-run")
    handle = deploy.launch(plan({"platform": "h200"}), "emulator", folder, progress=False, options={"time_scale": 0.05})
    try:
        target = read_handle(folder)
        invoke.save(invoke.run_all(target, invoke.InvokeOptions(timeout=60, parallel=1)), folder)
        speed.run_scenarios(
            speed.select_scenarios("smoke"),
            target,
            folder,
            command_prefix=FAKE_BENCH,
            offline=True,
            progress=False,
            verify_tokens=False,  # the fake client sends no request: nothing to count
            devices=8,
            platform="h200",
        )
    finally:
        handle.stop()
    return folder.path


@pytest.fixture
def copy(run_folder, tmp_path) -> Path:
    dest = tmp_path / "run"
    shutil.copytree(run_folder, dest)
    return dest


def test_collect_reads_every_stage_and_marks_missing_ones_not_run(run_folder):
    data = report.collect(RunFolder.of(run_folder))
    assert data.platform == "h200" and data.emulated
    assert data.invoke and data.speed is not None and len(data.speed) == 3
    assert data.accuracy is None
    assert data.stages["accuracy"].status == "not run"
    assert data.stages["invoke"].status == "ok"
    # every speed row says where it came from
    assert set(report_tables.speed_table(data)["source"]) == {f"emulated (run {data.run_id})"}
    assert report_tables.invoke_table(data)["source"].eq("EMULATED").all()


def test_verdict_levels(copy):
    data = report.collect(RunFolder.of(copy))
    assert report.verdict(data).level == "INCOMPLETE"  # accuracy never ran: not a pass
    (copy / RunFolder.RUNBOOK).write_text(json.dumps({"stages": ["deploy", "invoke", "speed"]}))
    assert report.verdict(report.collect(RunFolder.of(copy))).level == "PASS"

    doc = json.loads((copy / "invoke.json").read_text())
    doc["results"][0]["status"] = "fail"
    doc["results"][0]["reason"] = "broken parser"
    (copy / "invoke.json").write_text(json.dumps(doc))
    v = report.verdict(report.collect(RunFolder.of(copy)))
    assert v.level == "FAIL" and any("broken parser" in r for r in v.reasons)

    (copy / RunFolder.PLAN_ERRORS).write_text(json.dumps(["amd-aiter-mla-heads: tp 8 ..."]))
    assert report.verdict(report.collect(RunFolder.of(copy))).level == "INVALID"


def test_accuracy_errors_fail_and_skipped_suites_are_incomplete(copy):
    (copy / RunFolder.RUNBOOK).write_text(json.dumps({"stages": ["deploy", "invoke", "speed", "accuracy"]}))
    rows = [{"suite": "aime25", "metric": "pass_at_1", "status": "skipped", "detail": "no env"}]
    (copy / "accuracy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (copy / "stages.jsonl").open("a").write(json.dumps({"stage": "accuracy", "status": "ok"}) + "\n")
    v = report.verdict(report.collect(RunFolder.of(copy)))
    assert v.level == "INCOMPLETE" and v.reasons == ["accuracy suite aime25 skipped: no env"]
    rows.append({"suite": "toolcall-builtin", "metric": "success", "status": "error", "detail": "tool crashed"})
    (copy / "accuracy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    v = report.verdict(report.collect(RunFolder.of(copy)))
    assert v.level == "FAIL" and any("tool crashed" in r for r in v.reasons)


def test_warnings_security_skipped_and_regression(copy):
    plan = json.loads((copy / "manifest.json").read_text())["plan"]
    plan["config"]["host"] = "0.0.0.0"
    (copy / RunFolder.PLAN).write_text(json.dumps(plan))
    # a scenario the runner skipped, and a cookbook scenario far below the published H200 figure
    append_jsonl(
        copy / "bench.jsonl",
        {
            "scenario": "smoke-skipped",
            "status": "skipped",
            "metrics": {},
            "error": "ShareGPT needs a download",
            "emulated": True,
        },
    )
    append_jsonl(
        copy / "bench.jsonl",
        {
            "scenario": "chat-1k1k-c1",
            "status": "ok",
            "emulated": False,
            "max_concurrency": 1,
            "metrics": {"completed": 10, "output_throughput": 10.0, "total_throughput": 20.0, "median_tpot_ms": 100.0},
        },
    )
    kinds = {w.kind for w in report.warnings(report.collect(RunFolder.of(copy)))}
    assert {"security", "skipped", "regression", "emulated"} <= kinds
    texts = " ".join(w.text for w in report.warnings(report.collect(RunFolder.of(copy))))
    assert "0.0.0.0" in texts and "smoke-skipped" in texts and "chat-1k1k-c1" in texts


def test_stage_outcome_reads_only_that_stages_file(copy):
    """What the runbook records as a stage ends: that stage's own results, even with another
    stage's file torn (collect reads every file, and lists the torn one as a problem)."""
    (copy / "invoke.json").write_text("{torn")
    append_jsonl(copy / "bench.jsonl", {"scenario": "smoke-broken", "status": "failed", "metrics": {}, "error": "boom"})
    outcome = report.stage_outcome(RunFolder(copy), "speed")
    assert outcome is not None and outcome.status == "failed" and "smoke-broken failed: boom" in outcome.reason
    assert outcome == report.collect(RunFolder.of(copy)).outcomes["speed"]
    assert report.stage_outcome(RunFolder.of(copy), "invoke") is None  # unreadable: the notebook's own status stands
    assert report.stage_outcome(RunFolder.of(copy), "deploy") is None  # deploy's status is its notebook's


def test_accuracy_rows_go_through_the_evals_comparison(copy):
    evals = pytest.importorskip("kimi_runbooks.accuracy.common")
    row = evals.EvalRow(
        suite="toolcall", metric="schema_valid", value=0.5, n=10, emulated=True, source="emulated", status="ok"
    )
    evals.append_rows(RunFolder(copy), [row])
    data = report.collect(RunFolder.of(copy))
    assert data.stages["accuracy"].status == "ok"
    table = report.accuracy_comparison(data)
    assert table is not None and "source" in table.columns


def _append_slow_decode(folder: Path) -> None:
    """An ok scenario whose TPOT is 50x what any H200 plan is predicted to reach."""
    append_jsonl(
        folder / "bench.jsonl",
        {
            "scenario": "chat-1k1k-c1",
            "status": "ok",
            "emulated": False,
            "max_concurrency": 1,
            "metrics": {
                "completed": 10,
                "total_input_tokens": 10_000,
                "total_output_tokens": 10_000,
                "median_ttft_ms": 300.0,
                "median_tpot_ms": 1000.0,
                "output_throughput": 1.0,
            },
        },
    )


def test_predicted_beside_measured_flags_a_result_outside_the_band(copy):
    _append_slow_decode(copy)
    data = report.collect(RunFolder.of(copy))
    predicted = data.predicted.set_index("scenario")
    assert set(predicted.index) == set(data.speed[data.speed["status"] == "ok"]["scenario"])
    slow = predicted.loc["chat-1k1k-c1"]
    assert "median_tpot_ms" in slow["outside_band"] and "output_throughput" in slow["outside_band"]
    assert slow["predicted_median_tpot_ms"] < 100 and "by construction" in slow["prediction"]  # the run is emulated
    html = sections.speed_section(data)
    assert "Measured beside predicted" in html and "TPOT p50 measured (ms)" in html and "predicted (band)" in html
    assert '<b class="bad">outside</b>' in html and PREDICTION_SOURCE in html
    assert "agreement is expected by construction" in html
    warned = [w.text for w in report.warnings(data) if w.kind == "prediction"]
    assert any(t.startswith("chat-1k1k-c1 median_tpot_ms: emulated 1000 outside the predicted band") for t in warned)
    assert any("the prediction is bound by TPOT: " in t for t in warned)  # what to question first
    assert "what bounds the prediction" in html and slow["bound"].startswith("TPOT: ")
    assert not [s for s in next_steps(data) if "outside the predicted band" in s.what]  # emulated: no server to fix


def test_a_measured_result_outside_the_band_is_a_next_step(copy, monkeypatch):
    _append_slow_decode(copy)
    data = report.collect(RunFolder.of(copy))
    monkeypatch.setattr(type(data), "emulated", property(lambda self: False))  # as if a real server answered
    steps = [s for s in next_steps(data) if "outside the predicted band" in s.what]
    slow = [s for s in steps if "chat-1k1k-c1 (median_tpot_ms" in s.what]  # named on its kind's one line
    assert slow and "launch flags" in slow[0].fix and "calibrate --write" in slow[0].fix


def test_render_is_self_contained_small_and_hides_code(copy, monkeypatch):
    monkeypatch.setenv("REPORT_TEST_KEY", "sk-report-test-secret-123")
    (copy / "note.txt").write_text("unused")
    _append_slow_decode(copy)
    out = report.render(RunFolder.of(copy, secret_envs=["REPORT_TEST_KEY"]))
    text = out.read_text()
    assert out.stat().st_size < report_html.MAX_REPORT_BYTES
    assert report.external_references(text) == []
    assert "<script src=" not in text and 'rel="stylesheet" href="http' not in text
    assert text.count("window.Plotly = Plotly") == 1  # plotly.js inlined exactly once
    assert "plotly-graph-div" in text
    assert "EMULATED" in text and ">INCOMPLETE<" in text and "verdict: INCOMPLETE" in text
    assert "report.show_speed" not in text  # no code cells
    # predicted beside measured, with its source and the flag on the 50x-slow scenario
    assert "Measured beside predicted" in text and "predicted (band)" in text and PREDICTION_SOURCE in text
    assert '<b class="bad">outside</b>' in text
    assert (copy / "notebooks" / "report.ipynb").exists()


def _notebook_with_output(tmp_path: Path, html_text: str) -> Path:
    nb = new_notebook()
    cell = new_code_cell("x")
    cell.outputs = [new_output("display_data", data={"text/html": html_text})]
    nb.cells = [cell]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_export_refuses_external_scripts(tmp_path):
    path = _notebook_with_output(tmp_path, '<script src="https://cdn.example.com/x.js"></script>')
    with pytest.raises(RuntimeError, match="external resources"):
        report.export_html(path, RunFolder(tmp_path), tmp_path / "r.html")


def test_export_redacts_secret_values(tmp_path, monkeypatch):
    monkeypatch.setenv("SOME_VAR", "kkkk-secret-value-9876")
    path = _notebook_with_output(tmp_path, "<p>key is kkkk-secret-value-9876</p>")
    out = report.export_html(path, RunFolder(tmp_path, ["SOME_VAR"]), tmp_path / "r.html")
    assert "kkkk-secret-value-9876" not in out.read_text()
    report.redact_notebook(RunFolder(tmp_path, ["SOME_VAR"]), path)
    assert "kkkk-secret-value-9876" not in path.read_text()


def test_collect_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        report.collect(RunFolder(tmp_path / "nope"))


def test_compare_runs_builds_one_page(run_folder, copy, tmp_path):
    out = compare_runs_mod.build([RunFolder(run_folder), RunFolder(copy)], tmp_path / "cmp.html")
    text = out.read_text()
    assert report.external_references(text) == []
    assert "Pareto" in text and "smoke-random-ids-c4" in text
    assert text.count("EMULATED") >= 1
    assert report_cli.main([str(run_folder), str(copy), "-o", str(tmp_path / "cli.html")]) == 0
    assert (tmp_path / "cli.html").exists()
    assert report_cli.main([str(tmp_path / "missing")]) == 2


def test_a_key_equal_to_a_markup_word_is_redacted_everywhere_and_the_report_stays_intact(copy, monkeypatch):
    """Issue 13 case 9 kept the markup of a key equal to a markup word; issue 25 item 4 redacts every byte:
    the attribute loses its value, the document keeps its structure and shows the marker."""
    monkeypatch.setenv("MARKUP_WORD_KEY", "verdict")  # the report's verdict block carries class="verdict"
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["warnings"] = [*manifest.get("warnings", []), "the key verdict leaked into this warning"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    text = report.render(RunFolder.of(copy, secret_envs=["MARKUP_WORD_KEY"])).read_text()
    assert "verdict" not in text and 'class="&lt;redacted&gt;"' in text
    assert text.count("<table") == text.count("</table>") > 0
    assert "the key &lt;redacted&gt; leaked into this warning" in text and "<redacted>" not in text


KEY = "sk-live/0123456789abcdef"


def _plotly_payloads(text: str) -> list[tuple[list, dict]]:
    """(data, layout) of every Plotly.newPlot call, parsed as JSON."""
    decoder = json.JSONDecoder()
    found = []
    for chunk in text.split("Plotly.newPlot(")[1:]:
        rest = chunk[chunk.index(",") + 1 :].lstrip()
        data, end = decoder.raw_decode(rest)
        layout, _ = decoder.raw_decode(rest[end:].lstrip(", \n"))
        found.append((data, layout))
    return found


def test_a_key_in_a_figures_title_and_hover_text_is_redacted_and_the_figure_still_parses(tmp_path, monkeypatch):
    """Issue 25 item 4: report.html kept a configured key inside <script> (a plotly figure's JSON) and in
    attributes; every byte is redacted now, and the figure's JSON is still valid."""
    import plotly.graph_objects as go
    import plotly.io as pio

    monkeypatch.setenv("RUN_KEY", KEY)
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], hovertext=[f"served with {KEY}", "b"]))
    fig.update_layout(title=f"run against {KEY}")
    body = pio.to_html(fig, include_plotlyjs=False, full_html=False) + f'<p title="{KEY}">{KEY}</p>'
    path = _notebook_with_output(tmp_path, body)
    out = report.export_html(path, RunFolder(tmp_path, ["RUN_KEY"]), tmp_path / "r.html").read_bytes().decode()
    for form in (KEY, KEY.replace("/", "\\u002f"), KEY.replace("/", "\\/")):
        assert form not in out, form
    ((data, layout),) = _plotly_payloads(out)
    assert layout["title"]["text"] == "run against [redacted]"
    assert data[0]["hovertext"] == ["served with [redacted]", "b"]
    assert 'title="&lt;redacted&gt;"' in out


def test_a_key_in_a_scenario_name_leaves_no_byte_of_report_html(copy, monkeypatch):
    """Issue 25 item 4, end to end: a key in a scenario id reaches the Pareto figure's hover text, the
    time-series legend and the tables; report.html holds none of it, its figures still parse."""
    monkeypatch.setenv("RUN_KEY", KEY)
    rows = [json.loads(line) for line in (copy / "bench.jsonl").read_text().splitlines() if line.strip()]
    leaked = {**rows[0], "scenario": f"smoke-{KEY}"}
    append_jsonl(copy / "bench.jsonl", leaked)
    text = report.render(RunFolder.of(copy, secret_envs=["RUN_KEY"])).read_bytes().decode()
    assert KEY not in text and KEY.replace("/", "\\u002f") not in text
    payloads = _plotly_payloads(text)
    assert payloads and any("[redacted]" in json.dumps(d) for d, _ in payloads)


def _accuracy_run(copy: Path, rows: list[dict]) -> None:
    (copy / RunFolder.RUNBOOK).write_text(json.dumps({"stages": ["deploy", "invoke", "speed", "accuracy"]}))
    (copy / "accuracy.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (copy / "stages.jsonl").open("a").write(json.dumps({"stage": "accuracy", "status": "ok"}) + "\n")


def _gpqa(value: float, n: int, emulated: bool = False) -> dict:
    source = "emulated" if emulated else "measured"
    return {
        "suite": "gpqa-diamond",
        "metric": "accuracy",
        "value": value,
        "n": n,
        "emulated": emulated,
        "source": source,
    }


def test_accuracy_below_its_interval_warns_past_fail_drop_fails_with_a_next_step(copy):
    """Issue 25 item 1: a measured 0.85 over 200 GPQA questions (Wilson 95% up to ~0.89) lies under the
    published 0.969 (n=553, interval from ~0.95): WARN; 0.70 (up to ~0.76) is past fail_drop 0.10: FAIL."""
    _accuracy_run(copy, [_gpqa(0.95, 40)])
    assert report.verdict(report.collect(RunFolder.of(copy))).level == "PASS"  # 0.95 over 40: interval reaches 0.969
    _accuracy_run(copy, [_gpqa(0.85, 200)])
    data = report.collect(RunFolder.of(copy))
    v = report.verdict(data)
    assert v.level == "WARN" and "accuracy" in v.headline
    assert any("gpqa-diamond" in r and "beyond the interval" in r for r in v.reasons)
    steps = [s for s in next_steps(data) if "gpqa-diamond" in s.what]
    assert steps and "published settings" in steps[0].fix
    from kimi_runbooks.report import cards as report_cards

    assert "below its interval" in report_cards.accuracy_card(data)
    _accuracy_run(copy, [_gpqa(0.70, 200)])
    data = report.collect(RunFolder.of(copy))
    v = report.verdict(data)
    assert v.level == "FAIL" and any("fail_drop" in r for r in v.reasons)
    assert any(s.kind == "failure" and "gpqa-diamond" in s.what for s in next_steps(data))


def test_an_emulated_accuracy_result_is_not_comparable_never_a_red_delta(copy):
    """Issue 25 item 1: the demo's emulated aime25 0/2 against the published 0.989 read as a red delta under
    PASS; now it says "not comparable: emulated" and the verdict stays PASS."""
    from kimi_runbooks.report import cards as report_cards

    aime = {"suite": "aime25", "metric": "pass_at_1_avg1", "value": 0.0, "n": 2, "emulated": True}
    _accuracy_run(copy, [{**aime, "source": "emulated"}])
    data = report.collect(RunFolder.of(copy))
    assert report.verdict(data).level == "PASS"
    card = report_cards.accuracy_card(data)
    assert "not comparable: emulated" in card and 'class="bad"' not in card
    assert "not comparable: emulated" in sections.accuracy_section(data)
    assert not [s for s in next_steps(data) if "aime25" in s.what]
    # the same numbers measured on hardware: 0/2 tops out at 0.66, past 0.989 - 0.10
    _accuracy_run(copy, [{**aime, "emulated": False, "source": "measured"}])
    data = report.collect(RunFolder.of(copy))
    assert report.verdict(data).level == "FAIL"
    assert 'class="bad"' in report_cards.accuracy_card(data)
