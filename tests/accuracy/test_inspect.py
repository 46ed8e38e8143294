"""inspect-ai driver: published flags, dataset staging, and the .eval parser on a log produced by
running inspect-ai against the emulator on a tiny local GPQA-format CSV (heavy)."""

from __future__ import annotations

import shlex

import pytest

from kimi_runbooks.accuracy import inspect_eval as ie
from kimi_runbooks.accuracy.common import Endpoint, StageMissing, SuiteFailed, ToolJob
from kimi_runbooks.accuracy.references import reference_entry
from kimi_runbooks.emulator.testing import emulator_server
from tests.support import FIXTURES

MODEL = "moonshotai/Kimi-K2.6"
CSV = FIXTURES / "evals" / "gpqa_tiny.csv"


def test_published_flags_match_the_reference_command(tmp_path):
    cmd = shlex.split(reference_entry("gpqa-diamond")["command"])
    args = ie.build_args(
        ie.published_config(),
        model=MODEL,
        base_url="http://h/v1",
        log_dir=tmp_path,
        task=ie.task_args(ie.published_config(), tmp_path)[0],
    )
    for flag in ("--max-tokens", "--temperature", "--top-p", "--max-connections"):
        assert float(args[args.index(flag) + 1]) == float(cmd[cmd.index(flag) + 1])
    assert args[1] == ie.TASK and "cot=True" in args and "--epochs" not in args  # the task's 4 epochs
    assert args[args.index("--model") + 1] == f"openai/{MODEL}"


def test_local_csv_uses_a_local_task_and_official_csv_is_staged(tmp_path):
    task, env = ie.task_args(ie.smoke_config(dataset_path=str(CSV)), tmp_path)
    assert task[0].endswith("gpqa_local.py@gpqa_local") and f"csv={CSV.resolve()}" in task and env == {}
    assert "record_to_sample" in (tmp_path / "gpqa_local.py").read_text()
    with pytest.raises(StageMissing, match="download"):
        ie.task_args(ie.smoke_config(dataset_path=str(tmp_path / "none.csv")), tmp_path)
    dest = ie.stage_gpqa_csv(CSV, tmp_path / "cache")
    assert dest == tmp_path / "cache" / "gpqa" / "gpqa_diamond.csv" and dest.read_bytes() == CSV.read_bytes()


def test_log_metrics_rejects_failed_logs():
    with pytest.raises(SuiteFailed, match="error"):
        ie.log_metrics({"status": "error", "error": "boom", "scores": []})
    rows = ie.log_metrics(
        {
            "status": "success",
            "completed_samples": 8,
            "scores": [{"name": "choice", "metrics": {"accuracy": 0.25, "stderr": 0.1}}],
        }
    )
    assert rows == [{"metric": "accuracy", "value": 0.25, "n": 8, "kind": "rate", "stderr": 0.1}]


@pytest.mark.heavy
def test_inspect_eval_log_from_a_real_run_against_the_emulator(tmp_path, require_tool_env):
    env = require_tool_env("inspect")
    cfg = ie.InspectConfig(max_tokens=512, max_connections=4, epochs=2, limit=3, dataset_path=str(CSV))
    with emulator_server(time_scale=0.01, log_startup=False) as url:
        run, log, summary, rows = ie.run(cfg, ToolJob(Endpoint(url + "/v1", MODEL), tmp_path), python=env.python)
    assert log.suffix == ".eval" and log.parent == tmp_path / "logs"
    assert summary["status"] == "success" and summary["dataset_samples"] == 5 and summary["epochs"] == 2
    assert summary["generate_config"]["max_tokens"] == 512 and summary["generate_config"]["top_p"] == 0.95
    acc = rows[0]
    assert acc["metric"] == "accuracy" and 0.0 <= acc["value"] <= 1.0 and acc["stderr"] is not None
    assert acc["n"] == summary["completed_samples"] and acc["n"] in (3, 6)
