"""Multi-node: per-node scripts in the run folder carry each Ascend deployment's flags, per role."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kimi_runbooks import deploy
from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.deploy import sbatch as slurm
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.rundir import RunFolder

CATALOG = load_catalog()
DEPLOYMENTS = sorted(d for d, dep in CATALOG.deployments.items() if dep.platform == "ascend-a3")
CONCRETE = {
    "model_path": "/models/kimi-w4a8",
    "draft_model_path": "/models/eagle3",
    "ifname": "enp1s0",
    "node_ips": ["10.0.0.1", "10.0.0.2"],
    "prefill_ip": "10.0.1.1",
    "decode_ip": "10.0.2.1",
}


def _exec_flags(script: str) -> tuple[list[str], dict[str, list[str]]]:
    line = next(row for row in script.splitlines() if row.startswith("exec "))
    words = shlex.split(line[5:])
    flags: dict[str, list[str]] = {}
    current = None
    for word in words:
        if word.startswith("--"):
            current = word
            flags[current] = []
        elif current:
            flags[current].append(word)
    return words, flags


def _exports(script: str) -> dict[str, str]:
    out = {}
    for line in script.splitlines():
        if line.startswith("export "):
            key, _, value = line[7:].partition("=")
            out[key] = shlex.split(value)[0] if value else ""
    return out


def _fill(value: str, rank: int, nnodes: int) -> str:
    values = {
        "model_path": CONCRETE["model_path"],
        "draft_model_path": CONCRETE["draft_model_path"],
        "ifname": CONCRETE["ifname"],
        "prefill_ip": CONCRETE["prefill_ip"],
        "decode_ip": CONCRETE["decode_ip"],
        "master_ip": CONCRETE["node_ips"][0],
        "node_ip": CONCRETE["node_ips"][rank],
        "node_rank": str(rank),
        "nnodes": str(nnodes),
    }
    return re.sub(r"\{([a-z_]+)\}", lambda m: values[m.group(1)], value)


def _same(expected: object, got: list[str], rank: int, nnodes: int) -> bool:
    if expected is True:
        return got == []
    items = expected if isinstance(expected, list) else [expected]
    if len(items) != len(got):
        return False
    for want, have in zip(items, got):
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            if float(have) != float(want):
                return False
        elif _fill(str(want), rank, nnodes) != have:
            return False
    return True


def test_there_are_ascend_deployments() -> None:
    assert len(DEPLOYMENTS) >= 5


@pytest.mark.parametrize("deployment_id", DEPLOYMENTS)
def test_scripts_carry_each_roles_flags(deployment_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dep = CATALOG.deployment(deployment_id)
    plan = make_plan({"platform": "ascend-a3", "deployment": deployment_id, **CONCRETE})
    handle = deploy.launch(plan, "multi-node", RunFolder.create(tmp_path / "run"), progress=False)
    assert not handle.owns  # started by hand, never stopped by us
    out = capsys.readouterr().out
    expected_files = []
    for role in dep.roles:
        for rank in range(role.nodes):
            path = tmp_path / "run" / f"node-{role.name}-{rank}.sh"
            expected_files.append(path)
            assert path.exists() and path.stat().st_mode & 0o111, f"{path.name} missing or not executable"
            assert f"bash {path}" in out  # the printed steps name it
            script = path.read_text()
            assert "${" not in script.replace("${HOME}", ""), "a placeholder was left unresolved"
            words, flags = _exec_flags(script)
            assert " ".join(words).startswith(role.entrypoint)
            for flag, value in role.args.items():
                assert flag in flags, f"{role.name} node {rank}: {flag} missing"
                assert _same(value, flags[flag], rank, role.nodes), (
                    f"{role.name} node {rank}: {flag} {flags[flag]} != {value}"
                )
            exports = _exports(script)
            for key, value in {**dep.env, **role.env}.items():
                assert exports.get(key) == _fill(str(value), rank, role.nodes), f"{role.name}: env {key}"
            for name in dep.unset_env:
                assert f"unset {name}" in script
            for src in dep.source_scripts:
                assert f"source {src}" in script
    written = sorted((tmp_path / "run").glob("node-*.sh"))
    assert written == sorted(expected_files)
    router = tmp_path / "run" / "router.sh"
    if dep.router is None:
        assert not router.exists()
    else:
        words, flags = _exec_flags(router.read_text())
        assert " ".join(words).startswith(dep.router.entrypoint)
        for flag, value in dep.router.args.items():
            assert _same(value, flags.get(flag, ["<missing>"]), 0, 1), f"router {flag}"
        assert f"bash {router}" in out
    assert (tmp_path / "run" / "STEPS.txt").exists()


def test_unset_placeholders_stay_guarded_variables(tmp_path: Path) -> None:
    plan = make_plan({"platform": "ascend-a3", "deployment": DEPLOYMENTS[0]})
    handle = deploy.launch(plan, "multi-node", RunFolder.create(tmp_path / "run"), progress=False)
    script = handle.scripts[0].read_text()
    assert "${MODEL_PATH:?set MODEL_PATH" in script and "{model_path}" not in script
    assert "${" in handle.base_url  # readiness is not attempted against an unknown address


def test_multinode_sbatch_maps_nodes(tmp_path: Path) -> None:
    pd = next(d for d in DEPLOYMENTS if CATALOG.deployment(d).mode == "pd-disaggregation")
    plan = make_plan({"platform": "ascend-a3", "deployment": pd})
    scripts, router = deploy.write_node_scripts(plan, RunFolder(tmp_path))
    text = slurm.multinode_sbatch_script(slurm.SlurmJob(job_name="j"), tmp_path, plan.nodes, scripts, router)
    assert f"#SBATCH --nodes={len(plan.nodes)}" in text
    assert "export PREFILL_IP\n" in text and "export DECODE_IP\n" in text
    for i, script in enumerate(scripts):
        assert f"--relative={i}" in text and str(script) in text
    if router:
        assert str(router) in text
