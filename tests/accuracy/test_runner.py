"""The accuracy stage runner: rows appended per suite, missing pieces become skipped rows that say
how to stage them, finished suites are not rerun, the server comes from handle.json."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pydantic import ValidationError

from kimi_runbooks import accuracy
from kimi_runbooks.accuracy import AccuracyOptions, read_rows
from kimi_runbooks.accuracy.toolcall_samples import ci_samples
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle, write_handle
from kimi_runbooks.tools.envs import ToolEnvMissing, tool_env
from tests.support.stand_ins import k2vv_stand_in

MODEL = "moonshotai/Kimi-K2.6"


@contextmanager
def deployed_emulator(run: Path) -> Iterator[str]:
    """A fast emulator recorded in `run` as its deploy stage would (handle.json): the stage's `run` finds it."""
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        write_handle(RunFolder.create(run), RunHandle(base_url=url, model=MODEL, launcher="emulator", emulated=True))
        yield url


def test_unknown_suite_is_a_clear_error(tmp_path):
    with pytest.raises(ValidationError, match="unknown suite"):
        AccuracyOptions(suites=["aime2025"])


def _has_tool_env(name: str) -> bool:
    try:
        tool_env(name)
        return True
    except ToolEnvMissing:
        return False


def test_suites_run_skip_and_resume(tmp_path):
    run = tmp_path / "run"
    folder = RunFolder.create(run)
    with deployed_emulator(run):
        cfg = AccuracyOptions(
            suites=["k2vv-toolcall", "toolcall-builtin", "mmmu-pro", "gpqa-diamond"],
            kvv_path=str(tmp_path / "none"),
            datasets={"gpqa-diamond": str(tmp_path / "no.csv")},
            clone=False,
        )
        rows = accuracy.run(folder, cfg)
        lines_after_first = len(read_jsonl(run / "accuracy.jsonl"))
        again = accuracy.run(folder, cfg)
    by_suite = {}
    for r in rows:
        by_suite.setdefault(r.suite, []).append(r)
    assert [r.status for r in by_suite["k2vv-toolcall"]] == ["skipped"]
    assert "k2vv_path" in by_suite["k2vv-toolcall"][0].detail
    assert "git clone" in by_suite["mmmu-pro"][0].detail and by_suite["mmmu-pro"][0].status == "skipped"
    # the first missing piece is named: the staged dataset, or (on a machine without `make
    # tool-envs`) the inspect environment itself
    missing = "no.csv" if _has_tool_env("inspect") else "setup_tool_env.sh inspect"
    assert by_suite["gpqa-diamond"][0].status == "skipped" and missing in by_suite["gpqa-diamond"][0].detail
    tool = {r.metric: r for r in by_suite["toolcall-builtin"]}
    assert tool["success"].value == tool["success"].n == len(ci_samples()) and tool["success"].emulated
    assert tool["tool_call_f1"].settings["samples_kind"] == "ci-generated"
    # the server's /metrics were sampled while the suite ran (issue 16), and kept per suite
    assert tool["success"].server and tool["success"].server["samples"] >= 2
    assert (run / "metrics" / "accuracy-toolcall-builtin.jsonl").exists()
    # second call: toolcall-builtin is finished with the same settings, only the skipped ones are retried
    appended = read_jsonl(run / "accuracy.jsonl")[lines_after_first:]
    assert {r["suite"] for r in appended} == {"k2vv-toolcall", "mmmu-pro", "gpqa-diamond"}
    assert {r.metric for r in again if r.suite == "toolcall-builtin"} == set(tool)
    assert len(read_rows(RunFolder(run))) == len(read_jsonl(run / "accuracy.jsonl"))


def test_missing_handle_says_to_deploy_first(tmp_path):
    with pytest.raises(FileNotFoundError, match="deploy stage"):
        accuracy.run(RunFolder.create(tmp_path), AccuracyOptions())


K2VV_RECORDING_STAND_IN = k2vv_stand_in(record_calls=True)


def _checkout_with_python(path, marker, text):
    """A stand-in checkout with its own `.venv/bin/python` (this interpreter), as `uv sync` would make."""
    import sys

    (path / ".venv" / "bin").mkdir(parents=True)
    py = path / ".venv" / "bin" / "python"
    py.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    py.chmod(0o755)
    (path / marker).write_text(text)
    return path


@pytest.mark.slow  # three K2-Vendor-Verifier smoke runs: ~15 s; make test-all and CI run it
def test_k2vv_smoke_runs_the_limit_at_the_smoke_budget_and_setting_changes_rerun(tmp_path):
    from kimi_runbooks.accuracy import vendor_verifier as vv
    from kimi_runbooks.accuracy.toolcall_samples import write_ci_samples

    checkout = _checkout_with_python(tmp_path / "K2VV", vv.K2VV_MARKER, K2VV_RECORDING_STAND_IN)
    write_ci_samples(checkout / "tool-calls" / "samples.jsonl")  # 16 requests
    run = tmp_path / "run"
    folder = RunFolder.create(run)
    with deployed_emulator(run):
        cfg = AccuracyOptions(suites=["k2vv-toolcall"], k2vv_path=str(checkout), clone=False)
        rows = accuracy.run(folder, cfg)
        calls = read_jsonl(run / "accuracy" / "k2vv" / "calls.jsonl")
        assert [r.status for r in rows][:1] == ["ok"], rows[0].detail
        assert len(calls) == 1 and calls[0]["samples"] == 2  # SMOKE_LIMIT requests, not all 16
        argv = calls[0]["argv"]
        assert argv[argv.index("--max-tokens") + 1] == "2048"  # not the published 64000
        assert rows[0].settings["limit"] == 2 and rows[0].settings["max_tokens"] == 2048
        success = next(r for r in rows if r.metric == "success")
        assert success.n == 2

        accuracy.run(folder, cfg)  # same settings: skipped
        assert len(read_jsonl(run / "accuracy" / "k2vv" / "calls.jsonl")) == 1
        accuracy.run(folder, cfg.model_copy(update={"concurrency": 3}))  # a changed setting is not "already finished"
        calls = read_jsonl(run / "accuracy" / "k2vv" / "calls.jsonl")
        assert len(calls) == 2 and calls[1]["argv"][calls[1]["argv"].index("--concurrency") + 1] == "3"
        accuracy.run(folder, cfg.model_copy(update={"concurrency": 3, "limits": {"k2vv-toolcall": 3}}))
        assert read_jsonl(run / "accuracy" / "k2vv" / "calls.jsonl")[-1]["samples"] == 3


def test_kvv_gets_the_limit_and_its_settings_are_in_the_fingerprint(tmp_path, monkeypatch):
    from kimi_runbooks.accuracy import runner
    from kimi_runbooks.accuracy import vendor_verifier as vv
    from kimi_runbooks.accuracy.common import SuiteFailed

    calls = []

    def fake_run_kvv(suite, job, **kwargs):
        calls.append({"suite": suite, "server": job.server, **kwargs})
        raise SuiteFailed("stand-in: recorded the call")

    monkeypatch.setattr(runner.vendor_verifier, "run_kvv", fake_run_kvv)
    checkout = _checkout_with_python(tmp_path / "KVV", vv.KVV_MARKER, "")
    run = tmp_path / "run"
    folder = RunFolder.create(run)
    with deployed_emulator(run):
        cfg = AccuracyOptions(suites=["ocrbench"], kvv_path=str(checkout), clone=False)
        rows = accuracy.run(folder, cfg)
        accuracy.run(folder, cfg.model_copy(update={"limits": {"ocrbench": 5}, "concurrency": 7}))
        fp = {
            runner._fingerprint(
                runner.SuiteContext(folder, c, runner.resolve_server(folder, c), {"model": MODEL, "emulated": True}),
                "ocrbench",
            )
            for c in (
                cfg,
                cfg.model_copy(update={"kvv_path": str(tmp_path / "other")}),
                cfg.model_copy(update={"concurrency": 7}),
                cfg.model_copy(update={"published": True}),
            )
        }
    assert rows[0].status == "error" and "stand-in" in rows[0].detail
    assert calls[0]["limit"] == 2 and calls[0]["overrides"] == {"max_tokens": 1024}
    assert calls[0]["server"].model == MODEL and calls[0]["server"].base_url.endswith("/v1")
    assert calls[1]["limit"] == 5 and calls[1]["overrides"] == {"max_connections": 7, "max_tokens": 1024}
    assert len(fp) == 4
