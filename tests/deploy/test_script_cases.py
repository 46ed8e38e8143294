"""Issue 13 cases 3 and 4 as reported: the generated scripts run, and user values never do.

Each test reproduces one report with the public API only (plan(), the sbatch writer, bash);
tests/deploy/test_generated_scripts.py covers every platform and deployment the same way.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from kimi_runbooks.deploy import sbatch as slurm
from kimi_runbooks.plan import PlanConfig, plan
from tests.support.shell_stubs import StubBin

INJECTION = "--foo=${HOME}$(touch pwned)"


@pytest.fixture
def stubs(tmp_path: Path) -> StubBin:
    return StubBin(tmp_path)


def test_h200_two_node_scripts_pass_bash_n(tmp_path: Path) -> None:
    """`plan h200 tp 16 nnodes 2`: the hint "node 0's address" held an apostrophe."""
    launch = plan({"platform": "h200", "tp": 16, "nnodes": 2})
    assert len(launch.nodes) == 2
    for node in launch.nodes:
        path = tmp_path / f"node-{node.node_rank}.sh"
        path.write_text(node.script)
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        proc = subprocess.run(["bash", "-n", "-c", node.command], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr


def test_ascend_two_node_scripts_keep_port_nnodes_and_dist_init_addr(stubs: StubBin, tmp_path: Path) -> None:
    """Two apostrophes (node 0's, node 1's) paired up and swallowed the flags between them."""
    launch = plan({"platform": "ascend-a3", "deployment": "ascend-a3-16p-mixed-in64k-out1k"})
    env = stubs.environ(
        MODEL_PATH="/models/w4a8",
        DRAFT_MODEL_PATH="/models/eagle3",
        IFNAME="eth0",
        NODE0_IP="10.0.0.1",
        NODE1_IP="10.0.0.2",
    )
    for node in launch.nodes:
        stubs.reset()
        path = tmp_path / f"node-{node.node_rank}.sh"
        path.write_text(node.script)
        proc = stubs.run_bash([str(path)], env)
        assert proc.returncode == 0, proc.stderr
        (call,) = stubs.calls("python3")
        argv = call["argv"]
        assert argv[:2] == ["-m", "sglang.launch_server"]
        flags = {argv[i]: argv[i + 1] for i in range(2, len(argv) - 1) if argv[i].startswith("--")}
        assert flags["--port"] == "6688"
        assert flags["--nnodes"] == "2"
        assert flags["--dist-init-addr"] == "10.0.0.1:5000"
        assert flags["--node-rank"] == str(node.node_rank)
        assert flags["--host"] == f"10.0.0.{node.node_rank + 1}"


def test_amd_multi_node_script_exports_env_instead_of_exec_ing_it(stubs: StubBin, tmp_path: Path) -> None:
    """`exec SGLANG_USE_AITER=1 sglang ...` failed with `exec: SGLANG_USE_AITER=1: not found`."""
    launch = plan({"platform": "mi350x", "tp": 8, "nnodes": 2, "allow": ["amd-aiter-mla-heads"]})
    path = tmp_path / "node-0.sh"
    path.write_text(launch.nodes[0].script)
    proc = stubs.run_bash([str(path)], stubs.environ(NODE0_IP="10.0.0.1"))
    assert proc.returncode == 0, proc.stderr
    (call,) = stubs.calls("sglang")
    assert call["env"]["SGLANG_USE_AITER"] == "1" and call["env"]["SGLANG_ROCM_FUSED_DECODE_MLA"] == "0"
    assert call["argv"][:2] == ["serve", "--model-path"] and "--dist-init-addr" in call["argv"]


def test_extra_arg_is_not_run_by_the_printed_command(stubs: StubBin) -> None:
    launch = plan({"platform": "h200", "extra_args": [INJECTION]})
    proc = stubs.run_bash(["-c", launch.command], stubs.environ())
    assert proc.returncode == 0, proc.stderr
    assert not (stubs.cwd / "pwned").exists(), "the printed command ran the user's $(...)"
    (call,) = stubs.calls("sglang")
    assert "${HOME}$(touch pwned)" in call["argv"] or INJECTION in call["argv"]


def test_extra_arg_is_not_run_by_a_node_script(stubs: StubBin, tmp_path: Path) -> None:
    launch = plan({"platform": "h200", "tp": 16, "nnodes": 2, "extra_args": [INJECTION]})
    path = tmp_path / "node-0.sh"
    path.write_text(launch.nodes[0].script)
    proc = stubs.run_bash([str(path)], stubs.environ(NODE0_IP="10.0.0.1"))
    assert proc.returncode == 0, proc.stderr
    assert not (stubs.cwd / "pwned").exists(), "the node script ran the user's $(...)"


def test_extra_arg_is_not_run_by_the_sbatch_script(stubs: StubBin, tmp_path: Path) -> None:
    launch = plan({"platform": "h200", "extra_args": [INJECTION, "`touch pwned`"]})
    (tmp_path / "run").mkdir()
    path = tmp_path / "server.sbatch"
    path.write_text(slurm.sbatch_script(slurm.SlurmJob(job_name="j"), tmp_path / "run", launch.argv))
    proc = stubs.run_bash([str(path)], stubs.environ())
    assert proc.returncode == 0, proc.stderr
    assert not (stubs.cwd / "pwned").exists(), "the sbatch script ran the user's $(...) or backticks"
    (call,) = stubs.calls("sglang")
    assert "`touch pwned`" in call["argv"]


def test_env_names_are_validated() -> None:
    with pytest.raises(ValidationError, match="not environment variable names") as info:
        PlanConfig(platform="h200", env={"A=1 touch pwned; B": "x"})
    assert "Fix:" in str(info.value)
    assert PlanConfig(platform="h200", env={"SGLANG_X": "$(touch pwned)"}).env  # values are fine: quoted
