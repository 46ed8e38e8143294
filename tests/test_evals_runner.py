"""The accuracy stage runner: rows appended per suite, missing pieces become skipped rows that say
how to stage them, finished suites are not rerun, the server comes from handle.json."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.evals import AccuracyConfig, read_rows, run_accuracy
from kimi_runbooks.runinfo import RunHandle, read_jsonl, write_handle

MODEL = "moonshotai/Kimi-K2.6"


def test_unknown_suite_is_a_clear_error(tmp_path):
    with pytest.raises(ValidationError, match="unknown suite"):
        AccuracyConfig(run_dir=tmp_path, suites=["aime2025"])


def test_suites_run_skip_and_resume(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        write_handle(run, RunHandle(base_url=url, model=MODEL, launcher="emulator", emulated=True))
        cfg = AccuracyConfig(run_dir=run, suites=["k2vv-toolcall", "toolcall-builtin", "mmmu-pro", "gpqa-diamond"],
                             kvv_path=str(tmp_path / "none"), datasets={"gpqa-diamond": str(tmp_path / "no.csv")},
                             clone=False)
        rows = run_accuracy(cfg)
        lines_after_first = len(read_jsonl(run / "accuracy.jsonl"))
        again = run_accuracy(cfg)
    by_suite = {}
    for r in rows:
        by_suite.setdefault(r.suite, []).append(r)
    assert [r.status for r in by_suite["k2vv-toolcall"]] == ["skipped"]
    assert "k2vv_path" in by_suite["k2vv-toolcall"][0].detail
    assert "git clone" in by_suite["mmmu-pro"][0].detail and by_suite["mmmu-pro"][0].status == "skipped"
    assert by_suite["gpqa-diamond"][0].status == "skipped" and "no.csv" in by_suite["gpqa-diamond"][0].detail
    tool = {r.metric: r for r in by_suite["toolcall-builtin"]}
    assert tool["success"].value == tool["success"].n == 12 and tool["success"].emulated
    assert tool["tool_call_f1"].settings["samples_kind"] == "ci-generated"
    # second call: toolcall-builtin is finished with the same settings, only the skipped ones are retried
    appended = read_jsonl(run / "accuracy.jsonl")[lines_after_first:]
    assert {r["suite"] for r in appended} == {"k2vv-toolcall", "mmmu-pro", "gpqa-diamond"}
    assert {r.metric for r in again if r.suite == "toolcall-builtin"} == set(tool)
    assert len(read_rows(run)) == len(read_jsonl(run / "accuracy.jsonl"))


def test_missing_handle_says_to_deploy_first(tmp_path):
    with pytest.raises(FileNotFoundError, match="deploy stage"):
        run_accuracy(AccuracyConfig(run_dir=tmp_path))
