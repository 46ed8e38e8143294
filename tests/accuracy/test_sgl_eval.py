"""sgl-eval driver: defaults from the published command, argv, metrics.json parsing, and a real
(heavy) aime25 run against the emulator."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.accuracy import sgl_eval
from kimi_runbooks.accuracy.common import Endpoint, StageMissing, ToolJob
from kimi_runbooks.accuracy.references import reference_entry
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.tools import envs as toolenv
from tests.support import FIXTURES, missing

MODEL = "moonshotai/Kimi-K2.6"
EVAL_FIXTURES = FIXTURES / "evals"


def test_published_defaults_are_the_reference_command():
    words = shlex.split(reference_entry("aime25")["command"])
    flags = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
    cfg = sgl_eval.published_config("aime25")
    args = sgl_eval.build_args(cfg, base_url="http://h:1/v1", model=MODEL, out_dir=Path("/o"))
    got = {w: args[i + 1] for i, w in enumerate(args[:-1]) if w.startswith("--")}
    for flag in ("--n-repeats", "--temperature", "--top-p", "--max-tokens", "--prompt", "--num-threads"):
        assert float(got[flag]) == float(flags[flag]) if flag != "--prompt" else got[flag] == flags[flag]
    assert "--num-examples" not in got


def test_smoke_config_shrinks_only_the_size():
    pub, smoke = sgl_eval.published_config("aime25"), sgl_eval.smoke_config("aime25")
    assert (smoke.num_examples, smoke.n_repeats) == (2, 1) and smoke.max_tokens < pub.max_tokens
    assert (smoke.temperature, smoke.top_p, smoke.prompt) == (pub.temperature, pub.top_p, pub.prompt)
    with pytest.raises(ValueError, match="supported"):
        sgl_eval.published_config("aime99")


def _metrics(tmp_path, aggregate, n=3, repeats=4, outputs=None) -> Path:
    run = tmp_path / "sgl_eval_aime25_20260101-000000"
    run.mkdir(parents=True)
    (run / "metrics.json").write_text(
        json.dumps(
            {"aggregate": aggregate, "num_examples": n, "n_repeats": repeats, "latency_seconds": 12.5, "name": "aime25"}
        )
    )
    for i, verdicts in enumerate(outputs or []):
        (run / f"output-rs{i}.jsonl").write_text("".join(json.dumps({"symbolic_correct": v}) + "\n" for v in verdicts))
    return run / "metrics.json"


def test_parse_metrics_names_and_denominators(tmp_path):
    path = _metrics(
        tmp_path,
        {
            "pass@1": 0.75,
            "pass@1_sem": 0.1,
            "pass@1_std": 0.2,
            "pass@4": 1.0,
            "majority@4": 0.6667,
            "no_answer": 0.0,
            "stop_rate": 1.0,
            "score": 0.75,
        },
        outputs=[[True, True, True], [True, False, True], [True, True, True], [False, True, True]],
    )
    m = {r["metric"]: r for r in sgl_eval.parse_metrics(path)}
    assert (m["pass_at_1_avg4"]["value"], m["pass_at_1_avg4"]["n"], m["pass_at_1_avg4"]["stderr"]) == (0.75, 12, 0.1)
    assert (m["pass_at_4"]["n"], m["majority_at_4"]["value"]) == (3, 0.6667)
    assert m["stop_rate"]["n"] == 12 and "pass@1_std" not in m and "pass_at_1_std" not in m
    assert (m["perfect_repeats"]["value"], m["perfect_repeats"]["n"]) == (2, 4)
    assert m["latency_s"]["kind"] == "seconds"
    assert sgl_eval.find_metrics(tmp_path, "aime25") == path


def test_single_repeat_score_is_pass_at_1(tmp_path):
    m = {r["metric"]: r for r in sgl_eval.parse_metrics(_metrics(tmp_path, {"score": 0.5}, n=2, repeats=1))}
    assert m["pass_at_1_avg1"]["value"] == 0.5 and m["pass_at_1_avg1"]["n"] == 2


def test_parse_rejects_other_json(tmp_path):
    p = tmp_path / "metrics.json"
    p.write_text("{}")
    with pytest.raises(ValueError, match="aggregate"):
        sgl_eval.parse_metrics(p)


def test_missing_staged_dataset_says_how_to_stage(tmp_path):
    cfg = sgl_eval.SglEvalConfig(benchmark="gsm8k", from_dataset=str(tmp_path / "nope.jsonl"))
    with pytest.raises(StageMissing, match="NeMo-Skills"):
        sgl_eval.run(cfg, ToolJob(Endpoint("http://x/v1", MODEL, "k"), tmp_path), python_argv=["python"])


def _real_env(name: str):
    try:
        return toolenv.tool_env(name)
    except toolenv.ToolEnvMissing as exc:
        missing(f"the {name!r} tool env", f"bash scripts/setup_tool_env.sh {name} ({exc})")


def _run_on_emulator(cfg: sgl_eval.SglEvalConfig, env: toolenv.ToolEnv, out_dir: Path) -> Any:
    """The real sgl-eval from its tool env against a fast emulator, offline."""
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        job = ToolJob(Endpoint(url + "/v1", MODEL), out_dir)
        return sgl_eval.run(cfg, job, python_argv=env.argv(), env=toolenv.OFFLINE_ENV)


@pytest.mark.heavy
def test_sgl_eval_aime25_against_the_emulator(tmp_path):
    env = _real_env("sgl-eval")
    cfg = sgl_eval.smoke_config("aime25", num_examples=2, max_tokens=256)
    run, metrics_path, metrics = _run_on_emulator(cfg, env, tmp_path)
    assert run.returncode == 0 and metrics_path.parent.name.startswith("sgl_eval_aime25_")
    raw = json.loads(metrics_path.read_text())
    assert raw["num_examples"] == 2 and raw["n_repeats"] == 1 and raw["gen"]["max_tokens"] == 256
    m = {r["metric"]: r for r in metrics}
    # the emulator answers with filler, so accuracy is ~0; what matters is the pipeline parsed it
    assert 0.0 <= m["pass_at_1_avg1"]["value"] <= 1.0 and m["pass_at_1_avg1"]["n"] == 2
    assert m["stop_rate"]["value"] + m["truncated_rate"]["value"] + m["error_rate"]["value"] == pytest.approx(1.0)
    assert m["perfect_repeats"]["n"] == 1


@pytest.mark.heavy
def test_sgl_eval_with_a_staged_dataset(tmp_path):
    env = _real_env("sgl-eval")
    cfg = sgl_eval.SglEvalConfig(
        benchmark="aime25",
        n_repeats=2,
        max_tokens=256,
        num_threads=2,
        from_dataset=str(EVAL_FIXTURES / "aime_tiny.jsonl"),
    )
    _, _, metrics = _run_on_emulator(cfg, env, tmp_path)
    m = {r["metric"]: r for r in metrics}
    assert m["pass_at_1_avg2"]["n"] == 4 and m["majority_at_2"]["n"] == 2


FAKE_CLI = """
import json, os, sys
from pathlib import Path

def main():
    args = sys.argv[1:]
    out = Path(args[args.index("--out-dir") + 1]) / "sgl_eval_aime25_fake"
    out.mkdir(parents=True)
    left = os.environ.get("KIMI_RUNBOOKS_SGL_EVAL_API_KEY")
    (out / "argv.json").write_text(json.dumps({"argv": args, "env_left": left}))
    (out / "metrics.json").write_text(json.dumps({"aggregate": {"score": 1.0}, "num_examples": 1, "n_repeats": 1}))
    print(f"Metrics: {out / 'metrics.json'}")
    return 0
"""


def test_api_key_reaches_sgl_eval_but_no_command_line(tmp_path):
    fake = tmp_path / "fake"
    (fake / "sgl_eval").mkdir(parents=True)
    (fake / "sgl_eval" / "__init__.py").write_text("")
    (fake / "sgl_eval" / "cli.py").write_text(FAKE_CLI)
    key = "sk-sgl-" + os.urandom(6).hex()
    python_argv = [sys.executable, *toolenv.TOOLS["sgl-eval"].module_argv]  # what ToolEnv.argv() builds
    run, metrics_path, _ = sgl_eval.run(
        sgl_eval.smoke_config("aime25"),
        ToolJob(Endpoint("http://127.0.0.1:1/v1", MODEL, key), tmp_path / "out"),
        python_argv=python_argv,
        env={"PYTHONPATH": str(fake)},
    )
    seen = json.loads((metrics_path.parent / "argv.json").read_text())
    assert seen["argv"][0] == "run" and seen["argv"][-2:] == ["--api-key", key]  # the tool got it...
    assert seen["env_left"] is None  # ...and the variable is gone before sgl-eval runs
    assert not any(key in a for a in run.argv)  # ...but no argv the parent built or logged has it
    assert key not in run.log_text()
    assert "--api-key" not in sgl_eval.build_args(
        sgl_eval.smoke_config("aime25"), base_url="http://h/v1", model=MODEL, out_dir=tmp_path
    )


@pytest.mark.heavy
def test_real_sgl_eval_authenticates_with_the_key_from_the_environment(tmp_path):
    env = _real_env("sgl-eval")
    key = "sk-sgl-" + os.urandom(6).hex()
    cfg = sgl_eval.smoke_config("aime25", num_examples=1, max_tokens=64)
    with emulator_server(time_scale=0.01, log_startup=False, api_key=key) as url:
        run, _, metrics = sgl_eval.run(
            cfg, ToolJob(Endpoint(url + "/v1", MODEL, key), tmp_path), python_argv=env.argv(), env=toolenv.OFFLINE_ENV
        )
    m = {r["metric"]: r for r in metrics}
    assert run.returncode == 0 and m["error_rate"]["value"] == 0.0  # no 401s: the key arrived
    assert not any(key in a for a in run.argv)
