"""`--extra-arg` values are checked as SGLang's argument parser reads them, against a table
generated from SGLang itself; the heavy tests hold the table and the verdicts to SGLang's parser."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kimi_runbooks.catalog.flags import parse_extra_args
from kimi_runbooks.perfmodel import Predictor, Scenario
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.server_options import option_table, read_extra_options

REGEN = Path(__file__).resolve().parents[1] / "contract" / "regen_server_options.py"
FLAGGED = {"extra-arg-value", "extra-arg-unknown", "extra-arg-choice"}

# (extra args, the rule that fires or None); SGLang 0.5.23's parser refuses exactly the flagged ones
CASES: list[tuple[list[str], str | None]] = [
    (["--max-running-requests=64"], None),
    (["--max-running-requests", "64"], None),
    (["--max-running-requests=abc"], "extra-arg-value"),
    (["--max-running-requests=$(touch pwned)"], "extra-arg-value"),
    (["--max-running-requests"], "extra-arg-value"),
    (["--max-running-requests", "4", "8"], "extra-arg-value"),
    (["--schedule-conservativeness=0.3"], None),
    (["--schedule-conservativeness=fast"], "extra-arg-value"),
    (["--max-total-tokens=128k"], None),
    (["--max-total-tokens=1.5Ki"], "extra-arg-value"),
    (["--enable-metrics"], None),
    (["--enable-metrics=1"], "extra-arg-value"),
    (["--enable-metrics", "yes"], "extra-arg-value"),
    (["--attention-backend=triton"], None),
    (["--attention-backend=nope"], "extra-arg-choice"),
    (["--json-model-override-args", '{"a": 1}'], None),
    (["--foo-bar=1"], "extra-arg-unknown"),
    (["--enable-m"], "extra-arg-unknown"),
    (["--max-running=8"], None),
]


def fired(extra: list[str]) -> set[str]:
    _, flags = parse_extra_args(extra)
    return {r.id for r in read_extra_options(flags)[1]}


@pytest.mark.parametrize(("extra", "rule"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_each_case_fires_the_rule_it_should(extra: list[str], rule: str | None) -> None:
    assert fired(extra) == ({rule} if rule else set())


def test_a_wrong_type_is_an_error_and_an_unknown_option_a_warning() -> None:
    bad = plan({"platform": "h200", "extra_args": ["--max-running-requests=abc"]})
    (error,) = [e for e in bad.errors if e.id == "extra-arg-value"]
    assert "takes a whole number; 'abc' is not one" in error.message
    assert "--extra-arg=--max-running-requests=64" in error.fix and "SGLang 0.5.23" in error.source
    unknown = plan({"platform": "h200", "extra_args": ["--foo-bar=1"]})
    assert unknown.ok and "extra-arg-unknown" in {w.id for w in unknown.warnings}


def test_deployments_check_the_extra_args_too() -> None:
    launch = plan({"platform": "ascend-a3", "extra_args": ["--chunked-prefill-size=big"]})
    assert "extra-arg-value" in {e.id for e in launch.errors}


def test_a_unique_prefix_is_written_and_predicted_as_the_whole_option() -> None:
    launch = plan({"platform": "h200", "extra_args": ["--max-running=4"]})
    assert launch.ok and "--max-running" not in launch.argv
    assert launch.argv[launch.argv.index("--max-running-requests") + 1] == "4"
    p = Predictor(launch).predict(Scenario(1000, 1000, concurrency=16))
    assert p.kv_capacity_requests == 4 and p.capacity_limit == "max-running-requests"


def test_cli_refuses_a_bad_value_before_predicting_without_a_traceback() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", "plan", "--platform", "h200"]
        + ["--extra-arg=--max-running-requests=$(touch pwned)", "--predict", "in=1000,out=1000,c=16"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout
    assert "extra-arg-value" in proc.stderr and "not predicted, the plan is invalid" in proc.stdout


def test_the_table_is_sglangs_option_list() -> None:
    table = option_table()
    assert table.sglang_version and len(table.options) > 400
    assert table.options["--max-running-requests"].kind == "int"
    assert table.options["--enable-metrics"].kind == "switch"
    assert "triton" in table.options["--attention-backend"].choices


@pytest.mark.heavy
def test_the_table_matches_the_installed_sglang(require_tool_env: object) -> None:
    env = require_tool_env("bench")  # type: ignore[operator]
    proc = subprocess.run([str(env.python), str(REGEN), "--check"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.heavy
def test_sglangs_parser_refuses_exactly_what_the_planner_flags(require_tool_env: object) -> None:
    env = require_tool_env("bench")  # type: ignore[operator]
    script = (
        "import argparse, contextlib, io, json, sys\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "out = []\n"
        "for extra in json.loads(sys.argv[1]):\n"
        "    p = argparse.ArgumentParser()\n"
        "    ServerArgs.add_cli_args(p)\n"
        "    try:\n"
        "        with contextlib.redirect_stderr(io.StringIO()):\n"
        "            p.parse_args(['--model-path', 'm', *extra])\n"
        "        out.append(True)\n"
        "    except SystemExit:\n"
        "        out.append(False)\n"
        "print(json.dumps(out))\n"
    )
    extras = [extra for extra, _ in CASES]
    proc = subprocess.run(
        [str(env.python), "-c", script, json.dumps(extras)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    accepted = json.loads(proc.stdout.strip().splitlines()[-1])
    for (extra, _), ok in zip(CASES, accepted):
        assert ok == (not fired(extra) & FLAGGED), (extra, "SGLang accepts" if ok else "SGLang refuses")
