"""Vendor-verifier drivers: staging messages, published command rewriting, and the K2VV driver run
through a stand-in checkout (its tool_calls_eval.py calls the built-in eval, which writes the same
files) so the subprocess, paths and parsers are exercised without the real repository."""

from __future__ import annotations

import json
import sys

import pytest

from kimi_runbooks.accuracy import toolcall_eval as tc
from kimi_runbooks.accuracy import vendor_verifier as vv
from kimi_runbooks.accuracy.common import Endpoint, StageMissing, ToolJob
from kimi_runbooks.accuracy.toolcall_samples import write_ci_samples
from kimi_runbooks.emulator.testing import emulator_server
from tests.support.stand_ins import k2vv_stand_in

MODEL = "moonshotai/Kimi-K2.6"

STAND_IN = k2vv_stand_in(max_tokens="2048")


def test_missing_checkouts_say_how_to_stage(tmp_path):
    with pytest.raises(StageMissing, match=r"git clone .*K2-Vendor-Verifier.*\(k2vv_path=\.\.\.\)"):
        vv.ensure_checkout(None, vv.K2VV)
    with pytest.raises(StageMissing, match=f"no checkout at {tmp_path}"):
        vv.ensure_checkout(tmp_path, vv.KVV, clone=False)
    with pytest.raises(StageMissing, match="uv sync"):
        vv.checkout_python(tmp_path, None)


def test_published_command_is_rewritten_for_this_run():
    argv = vv.published_argv(
        "k2vv-toolcall",
        {
            "--model": "m",
            "--base-url": "http://h/v1",
            "--api-key": None,
            "--output": "/o/r.jsonl",
            "--concurrency": "3",
        },
        positional=["/s/samples.jsonl"],
    )
    assert argv[:2] == ["tool_calls_eval.py", "/s/samples.jsonl"]
    assert "--api-key" not in argv and argv[argv.index("--concurrency") + 1] == "3"
    assert argv[argv.index("--max-tokens") + 1] == "64000"  # kept from the published command
    kvv = vv.published_argv("ocrbench", {"--model": "openai/m", "--max-tokens": "100"})
    assert kvv[:2] == ["eval.py", "ocrbench"] and "--thinking" in kvv
    assert kvv[kvv.index("--max-tokens") + 1] == "100" and not any(w.startswith("OPENAI_") for w in kvv)


def test_k2vv_driver_runs_a_checkout_and_its_files_parse(tmp_path):
    checkout = tmp_path / "K2-Vendor-Verifier"
    (checkout / "tool-calls").mkdir(parents=True)
    (checkout / vv.K2VV_MARKER).write_text(STAND_IN)
    samples = write_ci_samples(checkout / "tool-calls" / "samples.jsonl")
    assert vv.ensure_checkout(checkout, vv.K2VV, clone=False) == checkout
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        run, results, summary = vv.run_k2vv(
            vv.K2vvConfig(samples, concurrency=4),
            ToolJob(Endpoint(url + "/v1", MODEL), tmp_path / "out"),
            checkout=checkout,
            python=sys.executable,
        )
    assert run.returncode == 0
    rows = tc.read_results(results)
    assert len(rows) == sum(1 for _ in samples.open())
    assert tc.read_summary(summary)["success_count"] == len(rows)
    assert tc.read_summary(summary)["finish_tool_calls"] == tc.summarize(rows)["finish_tool_calls"]
    log = run.log_text()
    assert log.startswith("$ ") and "--api-key" not in log.splitlines()[0]


FAKE_INSPECT = """
import json, os
from pathlib import Path

def eval(tasks, models, **kwargs):
    log_dir = Path(os.environ["INSPECT_LOG_DIR"])
    log_dir.mkdir(parents=True, exist_ok=True)
    (log_dir / "fake.eval").write_text(json.dumps({"tasks": tasks, "models": models, **kwargs}))
"""

KVV_STAND_IN = """
import argparse
from inspect_ai import eval
p = argparse.ArgumentParser()
p.add_argument("bench")
p.add_argument("--model")
p.add_argument("--max-tokens", type=int)
a, _ = p.parse_known_args()
eval([a.bench], [a.model], max_tokens=a.max_tokens)
"""


@pytest.fixture
def kvv_checkout(tmp_path, monkeypatch):
    """A stand-in Vendor Verifier checkout whose eval.py records its inspect_ai.eval() call."""
    (tmp_path / "lib" / "inspect_ai").mkdir(parents=True)
    (tmp_path / "lib" / "inspect_ai" / "__init__.py").write_text(FAKE_INSPECT)
    checkout = tmp_path / "Kimi-Vendor-Verifier"
    checkout.mkdir()
    (checkout / vv.KVV_MARKER).write_text(KVV_STAND_IN)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "lib"))
    return checkout


@pytest.mark.parametrize("limit", [2, None])
def test_kvv_limit_reaches_inspects_eval_call(tmp_path, kvv_checkout, limit):
    """eval.py has no --limit; the driver hands the limit to its inspect_ai.eval() call."""
    run, log = vv.run_kvv(
        "ocrbench",
        ToolJob(Endpoint("http://127.0.0.1:1/v1", MODEL), tmp_path / "out"),
        checkout=kvv_checkout,
        python=sys.executable,
        overrides={"max_tokens": 64},
        limit=limit,
    )
    called = json.loads(log.read_text())
    assert called["tasks"] == ["ocrbench"] and called["max_tokens"] == 64
    assert called.get("limit") == limit
    assert run.returncode == 0


def test_first_lines_copies_a_prefix(tmp_path):
    src = tmp_path / "s.jsonl"
    src.write_text('{"a": 1}\n\n{"a": 2}\n{"a": 3}')
    assert vv.first_lines(src, tmp_path / "o" / "two.jsonl", 2).read_text() == '{"a": 1}\n{"a": 2}\n'
    assert vv.first_lines(src, tmp_path / "all.jsonl", 10).read_text().count("\n") == 3
    with pytest.raises(ValueError, match="at least 1"):
        vv.first_lines(src, tmp_path / "none.jsonl", 0)


@pytest.mark.parametrize(("model", "max_tokens"), [("moonshotai/Kimi-K3", 16384), ("moonshotai/Kimi-K2.6", 4096)])
def test_kvv_runs_the_served_models_own_parameter_set(tmp_path, kvv_checkout, model, max_tokens):
    """A Kimi-K3 server runs the Vendor Verifier's K3 parameter set (params/references/accuracy-kvv-k3.yaml);
    any other model keeps the K2.6 cookbook's command."""
    run, log = vv.run_kvv(
        "ocrbench",
        ToolJob(Endpoint("http://127.0.0.1:1/v1", model), tmp_path / "out"),
        checkout=kvv_checkout,
        python=sys.executable,
    )
    assert json.loads(log.read_text())["max_tokens"] == max_tokens and run.returncode == 0
    argv = vv.published_argv("ocrbench", {"--model": f"openai/{model}"}, model=model)
    assert ("--thinking-effort" in argv) == (model.endswith("K3"))
    if model.endswith("K3"):
        assert argv[argv.index("--thinking-effort") + 1] == "max" and "--stream" in argv
