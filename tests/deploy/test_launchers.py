"""What each launcher would run, asserted for the MI350X and H200 plans (docker itself never runs)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from kimi_runbooks import deploy
from kimi_runbooks.deploy import sbatch as slurm
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.plan.shell import env_ref
from kimi_runbooks.rundir import RunFolder

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/tester", "KIMI_KEY": "sk-secret-value"}


def test_local_h200_argv_and_env() -> None:
    plan = make_plan({"platform": "h200", "cookbook_revision": "seed"})  # the seed pages' command, in their order
    argv, env = deploy.local_command(plan, ENV)
    assert argv == shlex.split(
        "sglang serve --model-path moonshotai/Kimi-K2.6 --tp 8 --reasoning-parser kimi_k2 "
        "--tool-call-parser kimi_k2 --trust-remote-code --host 127.0.0.1 --port 30000"
    )
    assert env == ENV  # the H200 recipe sets no env


def test_local_mi350x_argv_env_and_key() -> None:
    plan = make_plan({"platform": "mi350x", "api_key_env": "KIMI_KEY"})
    argv, env = deploy.local_command(plan, ENV)
    assert argv[:2] == ["sglang", "serve"]
    flags = " ".join(argv)
    for part in (
        "--tp 4",
        "--kv-cache-dtype fp8_e4m3",
        "--mem-fraction-static 0.8",
        "--reasoning-parser kimi_k2",
        "--tool-call-parser kimi_k2",
        "--trust-remote-code",
        "--host 127.0.0.1",
        "--port 30000",
        "--api-key sk-secret-value",
    ):
        assert part in flags
    assert env["SGLANG_USE_AITER"] == "1" and env["SGLANG_ROCM_FUSED_DECODE_MLA"] == "0"
    assert env["PATH"] == "/usr/bin:/bin"
    assert "${KIMI_KEY}" in plan.argv  # what is recorded keeps the reference, not the value


def test_local_missing_key_env_is_clear() -> None:
    plan = make_plan({"platform": "h200", "api_key_env": "NOT_SET_ANYWHERE"})
    with pytest.raises(deploy.DeployError, match="NOT_SET_ANYWHERE"):
        deploy.local_command(plan, ENV)


def test_docker_mi350x_argv() -> None:
    plan = make_plan({"platform": "mi350x", "port": 30001})
    argv, name = deploy.docker_command(plan, ENV)
    assert name == "kimi-runbooks-mi350x-30001"
    assert argv[:6] == ["docker", "run", "--rm", "-d", "--name", name]
    for flag in ("--device=/dev/kfd", "--device=/dev/dri", "--ipc=host"):
        assert flag in argv
    assert argv[argv.index("-p") + 1] == "127.0.0.1:30001:30001"
    assert argv[argv.index("-v") + 1] == "/home/tester/.cache/huggingface:/root/.cache/huggingface"
    assert "SGLANG_USE_AITER=1" in argv
    image = argv.index("lmsysorg/sglang:v0.5.9-rocm700-mi35x")
    inner = argv[image + 1 :]
    assert inner[:2] == ["sglang", "serve"] and "--gpus" not in argv
    assert inner[inner.index("--host") + 1] == "0.0.0.0"  # inside the container; published on 127.0.0.1
    assert inner[inner.index("--tp") + 1] == "4"


def test_docker_h200_argv_with_key() -> None:
    plan = make_plan({"platform": "h200", "api_key_env": "KIMI_KEY"})
    argv, name = deploy.docker_command(plan, ENV)
    assert argv[argv.index("--gpus") + 1] == "all" and "--device=/dev/kfd" not in argv
    assert argv[argv.index("--shm-size") + 1] == "32g"
    assert "lmsysorg/sglang:v0.5.9" in argv
    inner = argv[argv.index("lmsysorg/sglang:v0.5.9") + 1 :]
    assert inner[:2] == ["sh", "-c"] and len(inner) == 3
    script = shlex.split(inner[2])
    assert script[:3] == ["exec", "sglang", "serve"]
    assert script[script.index("--tp") + 1] == "8"
    # the shell inside the container expands the key; the argv only names the variable
    assert inner[2].endswith('--api-key "$KIMI_KEY"') and script.count("--api-key") == 1
    assert not any("sk-secret-value" in a for a in argv)
    assert "-e" in argv and "KIMI_KEY" in argv  # the container env gets the variable by name


def test_docker_key_value_is_in_no_argv_element_and_missing_key_is_clear(tmp_path: Path) -> None:
    plan = make_plan({"platform": "mi350x", "api_key_env": "KIMI_KEY", "cookbook_revision": "seed"})
    argv, _ = deploy.docker_command(plan, ENV)
    assert not any("sk-secret-value" in a for a in argv)
    assert argv[argv.index("-v") + 1].startswith("/home/tester/")  # ${HOME} still filled in
    inner = argv[argv.index("lmsysorg/sglang:v0.5.9-rocm700-mi35x") + 1 :]
    assert inner[:2] == ["sh", "-c"]
    assert "--host 0.0.0.0" in inner[2] and "${" not in inner[2]
    # what the container's shell runs: the server argv, the key expanded from its env at the end
    fake = tmp_path / "sglang"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@"\n')
    fake.chmod(0o755)
    out = subprocess.run(
        inner,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin", "KIMI_KEY": "sk-secret value$x"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out[:2] == ["serve", "--model-path"] and out[-2:] == ["--api-key", "sk-secret value$x"]
    with pytest.raises(deploy.DeployError, match="KIMI_KEY is not set"):
        deploy.docker_command(plan, {k: v for k, v in ENV.items() if k != "KIMI_KEY"})


def test_docker_preflight_refuses_without_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text(
        '#!/bin/sh\ncase "$1" in version) echo 28.2.2 ;; image) exit 1 ;; '
        'run) echo "docker run must not be called" >&2; exit 99 ;; esac\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    plan = make_plan({"platform": "mi350x", "port": deploy.free_port()})
    with pytest.raises(deploy.PreflightError, match="docker pull lmsysorg/sglang:v0.5.9-rocm700-mi35x"):
        deploy.launch(plan, "docker", RunFolder.create(tmp_path / "run"), progress=False)


def test_emulator_argv_carries_profile_and_plan_flags() -> None:
    plan = make_plan({"platform": "mi350x", "api_key_env": "KIMI_KEY"})
    argv = deploy.emulator_argv(
        plan, host="127.0.0.1", port=1234, options=deploy.EmulatorOptions(time_scale=0.5, fault="slow-start=3")
    )
    assert argv[:3] == [sys.executable, "-m", "kimi_runbooks.emulator"]
    text = " ".join(argv)
    for part in (
        "--profile mi350x",
        "--time-scale 0.5",
        "--fault slow-start=3",
        "--api-key-env KIMI_KEY",
        "--tp-size 4",
        "--kv-cache-dtype fp8_e4m3",
        "--port 1234",
    ):
        assert part in text
    assert "--api-key " not in text + " " and "${KIMI_KEY}" not in text
    assert f"--max-total-num-tokens {plan.memory.kv_pool_tokens}" in text  # emulated pool = planner estimate


def test_unknown_launcher() -> None:
    with pytest.raises(deploy.DeployError, match="unknown launcher"):
        deploy.launch(make_plan({"platform": "h200"}), "kubernetes")


def test_slurm_sbatch_script(tmp_path: Path) -> None:
    text = slurm.sbatch_script(
        slurm.SlurmJob(job_name="kimi-runbooks-x", secret_env="KIMI_KEY"),
        tmp_path,
        ["sglang", "serve", "--api-key", env_ref("KIMI_KEY"), "--tp", "8"],
    )
    assert "#SBATCH --job-name=kimi-runbooks-x" in text and "#SBATCH --export=ALL" in text
    line = next(row for row in text.splitlines() if row.startswith("srun "))
    words = shlex.split(line)
    assert words[words.index("--") + 1 :] == ["sglang", "serve", "--api-key", "${KIMI_KEY}", "--tp", "8"]
    assert "-m kimi_runbooks.deploy.logpump --log" in line and "--secret-env KIMI_KEY" in line
    assert '"${KIMI_KEY}"' in line  # expanded by bash in the job, not written here


def test_missing_srun_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(slurm.SlurmError, match="needs sbatch, srun"):
        deploy.launch(
            make_plan({"platform": "h200"}),
            "slurm",
            RunFolder.create(tmp_path / "r"),
            progress=False,
            options={"emulate": True},
        )
