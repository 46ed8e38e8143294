"""Every command and script the project generates runs as planned (issue 13, cases 3 and 4).

For every platform's default plan, every published deployment, the multi-node forms and plans
full of hostile values: the printed command, the docker form, each node script, the router
script and the sbatch scripts pass `bash -n` and shellcheck, and are EXECUTED with stub programs
on PATH (tests/support/shell_stubs.py) that record their argv and env. Each must receive exactly
the plan's argv and env (generated references filled from the environment, every user value
literal), and nothing a user typed is ever run.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.deploy import sbatch as slurm
from kimi_runbooks.deploy.launchers.multinode import write_node_scripts
from kimi_runbooks.plan import LaunchPlan, NodeCommand, plan
from kimi_runbooks.plan.shell import expand_word, script_text
from kimi_runbooks.rundir import RunFolder
from tests.support import missing
from tests.support.shell_stubs import StubBin, server_calls

CATALOG = load_catalog()
KEY_ENV = "KIMI_SCRIPT_TEST_KEY"
KEY = "sk-script-test-0123456789"
HOSTILE_ARGS = [
    "--foo=${HOME}$(touch pwned-dollar)",
    "--bar",
    "`touch pwned-backtick`",
    '--baz=it\'s "quoted" $(touch pwned-quote) \\ ;touch pwned-semicolon',
]
HOSTILE_ENV = {"SGLANG_HOSTILE": "$(touch pwned-env)`touch pwned-env2`${HOME}'\""}
HOSTILE = {"extra_args": HOSTILE_ARGS, "env": HOSTILE_ENV, "model_path": "/models/$(touch pwned-path) x"}

CASES: dict[str, dict[str, Any]] = {f"platform-{p}": {"platform": p} for p in sorted(CATALOG.platforms)}
CASES |= {
    f"deployment-{d}": {"platform": dep.platform, "deployment": d} for d, dep in sorted(CATALOG.deployments.items())
}
CASES |= {
    "h200-tp16-nnodes2": {"platform": "h200", "tp": 16, "nnodes": 2},
    "mi350x-tp8-nnodes2": {"platform": "mi350x", "tp": 8, "nnodes": 2, "allow": ["amd-aiter-mla-heads"]},
    "h200-key": {"platform": "h200", "api_key_env": KEY_ENV},
    "hostile-h200": {"platform": "h200", "api_key_env": KEY_ENV, **HOSTILE},
    "hostile-mi350x-docker": {"platform": "mi350x", **HOSTILE},
    "hostile-h200-nnodes2": {"platform": "h200", "tp": 16, "nnodes": 2, **HOSTILE},
    "hostile-ascend-mixed": {
        "platform": "ascend-a3",
        "deployment": "ascend-a3-16p-mixed-in64k-out1k",
        "ifname": "eth0",  # a hostile ifname is refused by the plan now (tests/plan/test_bad_input.py)
        **HOSTILE,
    },
    "hostile-ascend-pd": {
        "platform": "ascend-a3",
        "deployment": "ascend-a3-1p1d-16p-in128k-out1k",
        "draft_model_path": "/d/`touch pwned-draft`",
        **HOSTILE,
    },
}

NODE_ENV = {
    "MODEL_PATH": "/models/Kimi K2.6 (w4a8)",
    "DRAFT_MODEL_PATH": "/models/eagle3",
    "IFNAME": "enp1s0",
    "PREFILL_IP": "10.1.0.1",
    "DECODE_IP": "10.2.0.1",
    **{f"NODE{i}_IP": f"10.0.0.{i + 1}" for i in range(8)},
    KEY_ENV: KEY,
}
"""What an operator exports before running a node script by hand (launcher='multi-node')."""


def _plan(case: str) -> LaunchPlan:
    launch = plan(CASES[case])
    assert launch.ok, [str(e) for e in launch.errors]
    return launch


def _expanded(argv: list[str], environ: dict[str, str]) -> list[str]:
    return [expand_word(a, environ) for a in argv]


def _scripts(launch: LaunchPlan, tmp: Path) -> dict[str, str]:
    """Every text a user or a launcher runs for this plan, by name."""
    texts = {"command.sh": script_text([launch.command])}  # the printed command, saved as a script
    if launch.docker:
        texts["docker.sh"] = script_text([launch.docker])
    for node in launch.nodes:
        texts[f"node-{node.role}-{node.node_rank}.sh"] = node.script
        if node.docker:
            texts[f"docker-{node.role}-{node.node_rank}.sh"] = script_text([node.docker])
    if launch.router:
        texts["router.sh"] = launch.router.script
    run = tmp / "run"
    run.mkdir(exist_ok=True)
    job = slurm.SlurmJob(job_name="kimi-runbooks-test", secret_env=launch.config.api_key_env)
    if launch.nodes:
        scripts, router = write_node_scripts(launch, RunFolder(run))
        texts["multi.sbatch"] = slurm.multinode_sbatch_script(job, run, launch.nodes, scripts, router)
    else:
        texts["single.sbatch"] = slurm.sbatch_script(job, run, launch.argv, launch.env)
    return texts


@pytest.fixture
def stubs(tmp_path: Path) -> StubBin:
    return StubBin(tmp_path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_bash_n_and_shellcheck(case: str, tmp_path: Path) -> None:
    texts = _scripts(_plan(case), tmp_path)
    paths = []
    for name, text in texts.items():
        path = tmp_path / name
        path.write_text(text)
        paths.append(path)
        proc = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, f"{name} fails bash -n: {proc.stderr}\n{text}"
    if not shutil.which("shellcheck"):
        missing("shellcheck", "apt-get install shellcheck (bash scripts/install_shellcheck.sh; .ci/run runs it)")
    proc = subprocess.run(["shellcheck", "--shell=bash", *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout


def _check_server_call(
    call: list[str], node: NodeCommand | LaunchPlan, environ: dict[str, str], stubs: StubBin
) -> None:
    assert call == _expanded(node.argv, environ)
    (row,) = [c for c in stubs.calls() if [c["prog"], *c["argv"]] == call]
    for name, value in node.env.items():
        assert row["env"].get(name) == expand_word(value, environ), name


@pytest.mark.parametrize("case", sorted(CASES))
def test_printed_command_runs_as_planned(case: str, stubs: StubBin) -> None:
    launch = _plan(case)
    env = stubs.environ(**NODE_ENV)
    proc = stubs.run_bash(["-c", launch.command], env)
    assert proc.returncode == 0, proc.stderr
    (call,) = server_calls(stubs)
    _check_server_call(call, launch, env, stubs)
    if launch.docker_argv:
        stubs.reset()
        proc = stubs.run_bash(["-c", launch.docker or ""], env)
        assert proc.returncode == 0, proc.stderr
        (docker,) = stubs.calls("docker")
        assert ["docker", *docker["argv"]] == _expanded(launch.docker_argv, env)
    assert not list(stubs.cwd.parent.rglob("pwned*")), "a user value was executed"


@pytest.mark.parametrize("case", sorted(c for c in CASES if _plan(c).nodes))
def test_node_and_router_scripts_run_as_planned(case: str, stubs: StubBin, tmp_path: Path) -> None:
    launch = _plan(case)
    env = stubs.environ(**NODE_ENV)
    for node in [*launch.nodes, *([launch.router] if launch.router else [])]:
        stubs.reset()
        path = tmp_path / f"{node.role}-{node.node_rank}.sh"
        path.write_text(node.script)
        proc = stubs.run_bash([str(path)], env)
        assert proc.returncode == 0, f"{path.name}: {proc.stderr}"
        (call,) = server_calls(stubs)
        _check_server_call(call, node, env, stubs)
        if launch.deployment and node.role != "router":
            assert stubs.sourced() == launch.deployment.source_scripts
            setup = [c["argv"] for c in stubs.calls() if c["prog"] in ("sysctl", "tee")]
            assert len(setup) == len(launch.deployment.host_setup)
    assert not list(tmp_path.rglob("pwned*")), "a user value was executed"


@pytest.mark.parametrize("case", sorted(c for c in CASES if _plan(c).nodes and _plan(c).docker_image))
def test_each_nodes_docker_form_runs_that_nodes_argv(case: str, stubs: StubBin) -> None:
    """Issue 25 item 5: docker receives, after the image, exactly the node's argv as bash expands it
    (with hostile values), and the node's env through -e."""
    launch = _plan(case)
    assert launch.docker is None
    env = stubs.environ(**NODE_ENV)
    for node in launch.nodes:
        stubs.reset()
        proc = stubs.run_bash(["-c", node.docker or ""], env)
        assert proc.returncode == 0, proc.stderr
        (docker,) = stubs.calls("docker")
        argv = docker["argv"]
        image = argv.index(expand_word(launch.docker_image or "", env))
        assert argv[image + 1 :] == _expanded(node.argv, env), node.node_rank
        passed = [argv[i + 1] for i, w in enumerate(argv[:image]) if w == "-e"]
        assert {p for p in passed if "=" in p} == {f"{k}={expand_word(v, env)}" for k, v in node.env.items()}
    assert not list(stubs.cwd.parent.rglob("pwned*")), "a user value was executed"


def test_an_unset_placeholder_stops_the_script_before_the_server(stubs: StubBin, tmp_path: Path) -> None:
    launch = _plan("h200-tp16-nnodes2")
    path = tmp_path / "node.sh"
    path.write_text(launch.nodes[1].script)
    env = stubs.environ(**{k: v for k, v in NODE_ENV.items() if k != "NODE0_IP"})
    proc = stubs.run_bash([str(path)], env)
    assert proc.returncode != 0 and "set NODE0_IP to the address of node 0" in proc.stderr
    assert server_calls(stubs) == []


def _allocation_env(launch: LaunchPlan) -> dict[str, str]:
    """The addresses the multi-node sbatch script derives: node i of the allocation is 10.9.0.i."""
    out: dict[str, str] = {}
    for i, node in enumerate(launch.nodes):
        if node.role in ("mixed", "server"):
            out[f"NODE{node.node_rank}_IP"] = f"10.9.0.{i}"
        out.setdefault(f"{node.role.upper()}_IP", f"10.9.0.{i}")
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_sbatch_script_runs_as_planned(case: str, stubs: StubBin, tmp_path: Path) -> None:
    launch = _plan(case)
    texts = _scripts(launch, tmp_path)
    name = "multi.sbatch" if launch.nodes else "single.sbatch"
    path = tmp_path / name
    path.write_text(texts[name])
    assert KEY not in texts[name]
    submit_env = {k: v for k, v in NODE_ENV.items() if not k.endswith("_IP")}  # addresses come from Slurm
    env = stubs.environ(**submit_env, STUB_NODES=str(len(launch.nodes)), SLURM_JOB_NODELIST="node-[0-15]")
    proc = stubs.run_bash([str(path)], env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    calls = server_calls(stubs)
    if not launch.nodes:
        (call,) = calls
        _check_server_call(call, launch, env, stubs)
    else:
        resolved = {**env, **_allocation_env(launch)}
        expected = [_expanded(n.argv, resolved) for n in [*launch.nodes, *([launch.router] if launch.router else [])]]
        assert sorted(calls) == sorted(expected)
        for node in launch.nodes:
            _check_server_call(_expanded(node.argv, resolved), node, resolved, stubs)
    assert len(stubs.calls("srun")) == max(len(launch.nodes), 1) + (1 if launch.router else 0)
    assert not list(tmp_path.rglob("pwned*")), "a user value was executed"


def test_hostile_values_arrive_literally(stubs: StubBin) -> None:
    launch = _plan("hostile-h200")
    proc = stubs.run_bash(["-c", launch.command], stubs.environ(**NODE_ENV))
    assert proc.returncode == 0, proc.stderr
    (row,) = stubs.calls("sglang")
    argv = row["argv"]
    for arg in HOSTILE_ARGS:
        flag, eq, value = arg.partition("=")
        assert (argv[argv.index(flag) + 1] == value) if eq else arg in argv  # --f=v and --f v are one to SGLang
    assert row["argv"][row["argv"].index("--model-path") + 1] == HOSTILE["model_path"]
    assert row["argv"][row["argv"].index("--api-key") + 1] == KEY  # the one generated reference
    assert row["env"]["SGLANG_HOSTILE"] == HOSTILE_ENV["SGLANG_HOSTILE"]
    assert not list(stubs.cwd.parent.rglob("pwned*"))
