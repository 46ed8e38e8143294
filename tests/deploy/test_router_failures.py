"""The router fleet's failures name what failed (deploy/router.py, launchers/emulator.py start_pd_fleet):
a backend that dies before the router is ready, a router that cannot start, a missing router env;
and whatever was started is stopped."""

from __future__ import annotations

import sys

import pytest

from kimi_runbooks.deploy import launch
from kimi_runbooks.deploy.errors import DeployError
from kimi_runbooks.deploy.logpump import start_pumped
from kimi_runbooks.deploy.router import RouterAddress, replica_fleet, router_argv, wait_fleet
from kimi_runbooks.plan import PlanConfig
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.procs import group_alive
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.ports import free_port

PD = "ascend-a3-1p1d-16p-in128k-out1k"


def _pd_plan():
    return make_plan(PlanConfig(platform="ascend-a3", deployment=PD))


def test_router_argv_keeps_the_plans_flags_and_puts_this_machines_addresses():
    plan = _pd_plan()
    assert plan.router is not None
    argv = router_argv(
        plan.router.argv,
        "/env/bin/python",
        host="127.0.0.1",
        port=4000,
        prometheus_port=4001,
        prefill=[("http://127.0.0.1:5000", 5001)],
        decode=["http://127.0.0.1:6000"],
    )
    assert argv[:3] == ["/env/bin/python", "-m", "sglang_router.launch_router"]
    assert "--pd-disaggregation" in argv and argv[argv.index("--policy") + 1] == "cache_aware"
    assert argv[argv.index("--prefill") + 1 : argv.index("--prefill") + 3] == ["http://127.0.0.1:5000", "5001"]
    assert argv[argv.index("--decode") + 1] == "http://127.0.0.1:6000"
    assert argv[argv.index("--port") + 1] == "4000" and "6688" not in argv
    assert not any("PREFILL_IP" in a or "DECODE_IP" in a for a in argv)


def test_a_missing_router_env_is_an_error_with_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("KIMI_RUNBOOKS_VENVS", str(tmp_path / "no-venvs"))
    monkeypatch.delenv("KIMI_RUNBOOKS_ROUTER_PYTHON", raising=False)
    with pytest.raises(DeployError, match=r"router env is missing.*make tool-envs.*setup_tool_env.sh router"):
        launch(
            _pd_plan(),
            "emulator",
            folder=RunFolder.create(tmp_path / "run"),
            progress=False,
            options={"time_scale": 0.05},
        )


def _fleet(tmp_path, argvs, ports, policy="round_robin"):
    return replica_fleet(
        argvs,
        [f"http://127.0.0.1:{p}" for p in ports],
        tmp_path,
        RouterAddress("127.0.0.1", free_port("127.0.0.1"), free_port("127.0.0.1")),
        policy=policy,
        env={"PYTHONUNBUFFERED": "1", "PATH": "/usr/bin:/bin"},
        start=lambda argv, env, log: start_pumped(argv, env, log, None),
    )


@pytest.mark.heavy
def test_a_replica_that_dies_is_named_and_everything_is_stopped(require_tool_env, tmp_path):
    require_tool_env("router")
    ports = [free_port("127.0.0.1") for _ in range(2)]
    argvs = [
        [sys.executable, "-m", "kimi_runbooks.emulator", "--port", str(ports[0]), "--time-scale", "0.02"],
        [sys.executable, "-m", "kimi_runbooks.emulator", "--port", str(ports[1]), "--fault", "crash-on-start"],
    ]
    fleet = _fleet(tmp_path, argvs, ports)
    try:
        with pytest.raises(DeployError, match=rf"emulated replica-1 server \(http://127.0.0.1:{ports[1]}\) exited"):
            wait_fleet(fleet, timeout=120)
    finally:
        fleet.stop()
    assert not any(group_alive(g) for g in fleet.pgids())


@pytest.mark.heavy
def test_a_router_that_fails_to_start_is_named_with_its_log(require_tool_env, tmp_path):
    require_tool_env("router")
    port = free_port("127.0.0.1")
    argvs = [[sys.executable, "-m", "kimi_runbooks.emulator", "--port", str(port), "--time-scale", "0.02"]]
    fleet = _fleet(tmp_path, argvs, [port], policy="no_such_policy")  # the router's argparse refuses it
    try:
        with pytest.raises(DeployError, match=r"(?s)the sglang-router exited with code 2.*invalid choice"):
            wait_fleet(fleet, timeout=120)
    finally:
        fleet.stop()
    assert not any(group_alive(g) for g in fleet.pgids())


def test_teardown_from_process_json_stops_the_extra_groups_too(tmp_path):
    """A later process (the watchdog, teardown_run) stops every group a fleet recorded."""
    from kimi_runbooks.deploy.launchers.process import ProcessGroupLauncher
    from kimi_runbooks.procs import start_ticks
    from kimi_runbooks.rundir import RunFolder

    sleeps = [start_pumped(["sleep", "60"], {"PATH": "/usr/bin:/bin"}, tmp_path / f"s{i}.log", None) for i in range(3)]
    lead, *extra = (p.pid for p in sleeps)
    record = {"pgid": lead, "pgid_ticks": start_ticks(lead), "extra_pgids": [[g, start_ticks(g)] for g in extra]}
    stopped = ProcessGroupLauncher.stop_recorded(RunFolder.create(tmp_path / "run"), record)
    assert len(stopped) == 3
    for p in sleeps:
        p.wait(timeout=10)
    assert not any(group_alive(p.pid) for p in sleeps)
