"""Replicas behind sglang-router (plan/fleet.py): commands, ports, devices, router argv, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from kimi_runbooks import deploy
from kimi_runbooks.plan import PlanConfig, plan
from kimi_runbooks.plan.view import format_plan
from kimi_runbooks.rundir import RunFolder


def test_two_replicas_get_their_own_devices_ports_and_a_router() -> None:
    p = plan({"platform": "mi300x", "replicas": 2})
    assert p.ok, p.errors
    assert [(n.role, n.node_rank) for n in p.nodes] == [("replica", 0), ("replica", 1)]
    assert [n.env["HIP_VISIBLE_DEVICES"] for n in p.nodes] == ["0,1,2,3", "4,5,6,7"]
    ports = [n.argv[n.argv.index("--port") + 1] for n in p.nodes]
    assert ports == ["30001", "30002"]
    assert all("--tp" in n.argv and n.argv[n.argv.index("--tp") + 1] == "4" for n in p.nodes)
    assert p.router is not None
    assert p.router.argv == [
        "python3",
        "-m",
        "sglang_router.launch_router",
        "--worker-urls",
        "http://127.0.0.1:30001",
        "http://127.0.0.1:30002",
        "--policy",
        "cache_aware",
        "--host",
        "127.0.0.1",
        "--port",
        "30000",
    ]
    assert p.serve_port == 30000 and p.devices_used == 8
    assert not [w for w in p.warnings if w.id == "devices-idle"]
    assert p.command.splitlines()[-1] == p.router.command and p.command.count(" &") == 2


def test_policy_device_ids_and_wildcard_host() -> None:
    p = plan(
        {
            "platform": "h200",
            "tp": 8,
            "devices": 8,
            "replicas": 1,
        }
    )
    assert p.router is None and not p.nodes  # replicas 1: one server, as before
    p = plan(
        {
            "platform": "mi300x",
            "tp": 2,
            "replicas": 2,
            "device_ids": [4, 5, 6, 7],
            "router_policy": "round_robin",
            "host": "0.0.0.0",
            "port": 31000,
        }
    )
    assert [n.env["HIP_VISIBLE_DEVICES"] for n in p.nodes] == ["4,5", "6,7"]
    assert p.router is not None and "--policy round_robin" in p.router.command
    assert "http://127.0.0.1:31001 http://127.0.0.1:31002" in p.router.command
    assert "--host 0.0.0.0 --port 31000" in p.router.command
    assert p.device_env == {"HIP_VISIBLE_DEVICES": "4,5,6,7"}


def test_the_plan_text_prints_every_replica_and_the_router() -> None:
    text = format_plan(plan({"platform": "mi300x", "replicas": 2}))
    assert "## replica 0 (this node)" in text and "## replica 1 (this node)" in text
    assert "## router\npython3 -m sglang_router.launch_router --worker-urls" in text


@pytest.mark.parametrize(
    ("fields", "rule", "says"),
    [
        ({"replicas": 3}, "replicas-devices", "need 12 devices; the node has 8"),
        ({"replicas": 2, "device_ids": [0, 1, 2]}, "replicas-device-ids", "need 8 device_ids, 3 given"),
        ({"replicas": 2, "nnodes": 2}, "replicas-multi-node", "not supported yet"),
        ({"replicas": 2, "env": {"HIP_VISIBLE_DEVICES": "0"}}, "replicas-visible-devices", "pins each replica"),
        ({"replicas": 2, "api_key_env": "KEY"}, "replicas-api-key", "not supported yet"),
        ({"replicas": 2, "port": 65535}, "replicas-ports", "65536"),
    ],
)
def test_impossible_fleets_are_errors_with_a_fix(fields: dict[str, object], rule: str, says: str) -> None:
    p = plan({"platform": "mi300x", **fields})
    found = [e for e in p.errors if e.id == rule]
    assert found and says in found[0].message and found[0].fix and found[0].source.startswith("https://")
    assert p.router is None and not p.nodes


def test_a_deployment_refuses_replicas() -> None:
    p = plan({"platform": "ascend-a3", "deployment": "ascend-a3-1p1d-16p-in128k-out1k", "replicas": 2})
    assert [e.id for e in p.errors][:1] == ["replicas-deployment"]


def test_unknown_policy_is_refused_by_the_config() -> None:
    with pytest.raises(ValidationError, match="router_policy"):
        PlanConfig.model_validate({"platform": "mi300x", "replicas": 2, "router_policy": "fastest"})


def test_idle_devices_offer_both_replica_alternatives() -> None:
    alts = {a.title: a for a in plan({"platform": "mi300x"}).alternatives}
    assert "2 replicas of tp 4 (--dp 2)" in alts
    fleet = alts["2 replicas of tp 4 behind sglang-router (cache-aware)"]
    assert fleet.plan is not None and fleet.plan.ok and fleet.plan.router is not None
    assert fleet.as_dict()["devices_used"] == 8 and "sglang_router.launch_router" in fleet.as_dict()["command"]


def test_run_folder_scripts_one_per_replica_and_the_router(tmp_path: Path) -> None:
    p = plan({"platform": "mi300x", "replicas": 2})
    scripts, router = deploy.write_node_scripts(p, RunFolder(tmp_path))
    assert [s.name for s in scripts] == ["node-replica-0.sh", "node-replica-1.sh"]
    assert "HIP_VISIBLE_DEVICES=4,5,6,7" in scripts[1].read_text() and "--port 30002" in scripts[1].read_text()
    assert router is not None and "sglang_router.launch_router --worker-urls" in router.read_text()


def test_the_local_launcher_refuses_a_fleet_with_the_launcher_to_use() -> None:
    with pytest.raises(deploy.DeployError, match="launcher='multi-node'"):
        deploy.local_command(plan({"platform": "mi300x", "replicas": 2}), {"PATH": "/usr/bin"})


def test_the_multi_node_launcher_writes_the_fleet_steps(tmp_path: Path) -> None:
    handle = deploy.launch(
        plan({"platform": "mi300x", "replicas": 2}),
        "multi-node",
        RunFolder.create(tmp_path / "run"),
        progress=False,
    )
    steps = (tmp_path / "run" / "STEPS.txt").read_text()
    assert "1. replica 0, on this node: bash" in steps and "3. when the servers are up" in steps
    assert len(handle.scripts) == 3


def test_each_replica_has_its_own_docker_form_and_the_docker_launcher_says_why_not_one() -> None:
    p = plan({"platform": "mi300x", "replicas": 2})
    forms = [n.docker_argv for n in p.nodes]
    assert all(f is not None for f in forms) and p.docker_argv is None
    assert "127.0.0.1:30002:30002" in (forms[1] or []) and "HIP_VISIBLE_DEVICES=4,5,6,7" in (forms[1] or [])
    with pytest.raises(deploy.DeployError, match="2 servers \\(replicas behind sglang-router\\)"):
        deploy.docker_command(p, {"PATH": "/usr/bin", "HOME": "/home/u"})
