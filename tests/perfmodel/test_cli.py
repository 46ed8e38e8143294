"""`kimi-runbooks plan --predict`: the table a user reads and the JSON a tool reads."""

from __future__ import annotations

import json
import subprocess
import sys

SPEC = "in=1000,out=1000,c=1,16,64"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", *args], capture_output=True, text=True, timeout=120
    )


def test_predict_prints_the_table_with_its_band():
    proc = run("plan", "--platform", "h200", "--predict", SPEC)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "## verdict: VALID" in out  # the plan is still printed first
    table = out.split("## predicted speed", 1)[1]
    assert "PREDICTED" in table and "not measured" in table
    assert "nvidia-hopper, 8 devices" in table and "band basis: one page" in table
    assert "reference-from-run RUN_DIR" in table  # one page: how a user's own run narrows the band
    rows = [line for line in table.splitlines() if line.strip().startswith("1000")]
    assert [r.split()[2] for r in rows] == ["c=1", "c=16", "c=64"]
    assert all("[" in r and "-" in r for r in rows)


def test_a_family_without_results_says_so():
    proc = run("plan", "--platform", "mi355x", "--predict", "in=2000,out=500,c=8")
    assert proc.returncode == 0, proc.stderr
    assert "amd-cdna" in proc.stdout and "c=8" in proc.stdout
    # Blackwell has published results in FP8 and NVFP4 (B200), none in INT4: the W4A16 MoE path's terms
    # come from Hopper and AMD, but no Blackwell result validates them on this family
    proc = run("plan", "--platform", "b300", "--model", "kimi-k2.6", "--predict", "in=2000,out=500,c=8")
    assert "no published results of this family on this MoE path" in proc.stdout
    assert "precision=W4A16" in proc.stdout
    proc = run("plan", "--platform", "b300", "--model", "kimi-k2.6-nvfp4", "--predict", "in=2000,out=500,c=8")
    assert "a calibrated family" in proc.stdout and "band basis: one page" in proc.stdout


def test_predict_json_rows_have_the_documented_keys():
    proc = run(
        "plan",
        "--platform",
        "ascend-a3",
        "--deployment",
        "ascend-a3-1p1d-16p-in64k-out1k5",
        "--predict",
        "in=64000,out=1500,c=1,2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["deployment"] == "ascend-a3-1p1d-16p-in64k-out1k5" and data["command"]
    rows = data["prediction"]
    assert [r["concurrency"] for r in rows] == [1, 2]
    keys = {
        "input_len",
        "output_len",
        "concurrency",
        "median_ttft_ms",
        "median_tpot_ms",
        "output_throughput",
        "output_tok_s_per_device",
        "tok_s_per_user",
        "low",
        "high",
    }
    for row in rows:
        assert keys <= set(row)
        assert row["input_len"] == 64000 and row["output_len"] == 1500 and row["devices"] == 32
        for metric in ("median_ttft_ms", "median_tpot_ms", "output_throughput"):
            assert row["low"][metric] <= row[metric] <= row["high"][metric]


def test_json_without_predict_has_no_prediction_key():
    proc = run("plan", "--platform", "h200", "--json")
    assert "prediction" not in json.loads(proc.stdout)


def test_bad_spec_exits_2_with_the_rule_and_an_example():
    proc = run("plan", "--platform", "h200", "--predict", "in=1000,c=4")
    assert proc.returncode == 2
    assert "needs in=, out=" in proc.stderr and "Example: in=1000,out=1000,c=1,16,64" in proc.stderr


def test_invalid_plan_is_not_predicted():
    proc = run("plan", "--platform", "mi350x", "--tp", "8", "--predict", SPEC)
    assert proc.returncode == 2
    assert "not predicted, the plan is invalid" in proc.stdout


def test_predict_labels_the_stack_with_the_plans_sglang_version_not_the_image_tag():
    # h200's image is lmsysorg/sglang:v0.5.9; --sglang-version decides which rules apply, so it is the stack's
    args = ("plan", "--platform", "h200", "--sglang-version", "0.5.11", "--predict", "in=1000,out=1000,c=1")
    proc = run(*args)
    assert proc.returncode == 0, proc.stderr
    stack_line = next(line for line in proc.stdout.splitlines() if line.startswith("# stack:"))
    assert "sglang_version=0.5.11" in stack_line and "0.5.9" not in stack_line
    proc = run(*args, "--json")
    assert json.loads(proc.stdout)["prediction"][0]["stack"]["sglang_version"] == "0.5.11"
