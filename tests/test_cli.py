"""The `kimi-runbooks` console script, run as a user would (subprocess)."""

import argparse
import json
import subprocess
import sys

import pytest

from kimi_runbooks.cli import main
from kimi_runbooks.plan import PlanConfig


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", *args], capture_output=True, text=True, timeout=60
    )


def test_mi350x_tp8_exits_2_with_the_aiter_reason():
    proc = run("plan", "--platform", "mi350x", "--tp", "8")
    assert proc.returncode == 2
    assert "amd-aiter-mla-heads" in proc.stderr and "heads_per_gpu % 16" in proc.stderr


def test_nvfp4_on_h200_exits_2_with_the_reason():
    proc = run("plan", "--platform", "h200", "--model", "kimi-k2.6-nvfp4")
    assert proc.returncode == 2
    assert "fp4-weights-need-hardware" in proc.stderr and "NVFP4: NVIDIA Blackwell" in proc.stderr


def test_json_has_the_documented_fields():
    proc = run("plan", "--platform", "mi350x", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data["command"], str) and isinstance(data["argv"], list)
    assert data["env"] == {"SGLANG_USE_AITER": "1", "SGLANG_ROCM_FUSED_DECODE_MLA": "0"}
    assert data["docker"].startswith("docker run")
    assert data["nodes"] == []
    assert data["memory"]["kv_bytes_per_token"] == 35136
    assert data["memory"]["weights_gib_per_device"] > 0 and data["memory"]["kv_pool_tokens"] > 0
    assert data["errors"] == []


def test_json_on_an_invalid_config_still_prints_and_exits_2():
    proc = run("plan", "--platform", "mi350x", "--tp", "8", "--json")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["errors"]


def test_multi_node_platform_lists_node_commands():
    data = json.loads(run("plan", "--platform", "ascend-a3", "--json").stdout)
    assert len(data["nodes"]) == 2 and data["docker"] is None


def test_allow_flag_and_unknown_platform():
    assert (
        run("plan", "--platform", "mi350x", "--tp", "8", "--nnodes", "2", "--allow", "amd-aiter-mla-heads").returncode
        == 0
    )
    proc = run("plan", "--platform", "a100")
    assert proc.returncode == 2 and "Valid platform ids" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("bad", [["--tp", "0"], ["--mem-fraction-static", "abc"]])
def test_bad_values_are_clear_errors(bad):
    proc = run("plan", "--platform", "h200", *bad)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_validate_params():
    proc = run("validate-params")
    assert proc.returncode == 0 and "12 platforms" in proc.stdout


def test_every_plan_config_field_is_a_plan_option_with_its_own_help(capsys):
    """One declaration per knob: PlanConfig's fields are the CLI's options, help from each field's docstring."""
    from kimi_runbooks.plan.cli_options import CLI_EXTRAS

    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, info in PlanConfig.model_fields.items():
        extra = CLI_EXTRAS.get(name)
        flag = extra.flags[0] if extra and extra.flags else "--" + name.replace("_", "-")
        assert flag in text, f"PlanConfig.{name} has no option {flag}"
        assert info.description, f"PlanConfig.{name} has no docstring, so its option has no help"
        assert " ".join(info.description.split())[:30] in text


@pytest.mark.parametrize("command", ["plan", "rules", "validate-params", "teardown", "emulator", "report"])
def test_help_shows_only_real_defaults(command, capsys):
    """Issue 40: `plan --help` printed "(default: PydanticUndefined)" for the five options whose field
    default comes from a factory (--extra-arg, --env, --allow, --device-ids, --node-ip)."""
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "PydanticUndefined" not in text and "default: []" not in text and "default: {}" not in text
    if command == "plan":
        assert "(default: 0.5.9)" in text and "(default: 30000)" in text  # real defaults still shown
        platform_help = text.split("--platform PLATFORM", 1)[1].split("--model", 1)[0]
        assert "default" not in platform_help  # required: no default at all


def test_plan_options_reach_the_config_typed():
    from kimi_runbooks.plan.cli_options import add_plan_options, config_from_args

    parser = argparse.ArgumentParser()
    add_plan_options(parser)
    args = parser.parse_args(
        [
            "--platform",
            "h200",
            "--tp",
            "4",
            "--no-tool-call-parser",
            "--env",
            "A=1",
            "--env",
            "B=x=y",
            "--device-ids",
            "4,5",
            "--no-trust-remote-code",
            "--nodes",
            "2",
            "--node-ip",
            "10.0.0.1",
            "--node-ip",
            "10.0.0.2",
            "--dist-init-port",
            "6000",
        ]
    )
    config = config_from_args(args)
    assert (config.tp, config.tool_call_parser, config.reasoning_parser) == (4, None, "default")
    assert config.env == {"A": "1", "B": "x=y"} and config.device_ids == [4, 5]
    assert config.trust_remote_code is False and config.nnodes == 2 and config.dist_init_port == 6000
    assert config.node_ips == ["10.0.0.1", "10.0.0.2"]
    assert config_from_args(parser.parse_args(["--platform", "h200"])) == PlanConfig(platform="h200")
