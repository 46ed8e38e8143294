"""Launcher sglang-cpu with a `replicas` plan, without starting SGLang: what it starts (one CPU server
per replica on one shared tiny checkpoint, each with its own port, log and flags, then the plan's
sglang-router), what it records so teardown stops every group, and the PD deployments it refuses.
The processes are stand-ins (`sleep` behind the log pump); test_router_real_workers.py runs the real ones."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kimi_runbooks.deploy import launch, teardown_run
from kimi_runbooks.deploy.errors import DeployError
from kimi_runbooks.deploy.launchers import behind_router as fleet
from kimi_runbooks.deploy.launchers import sglang_cpu
from kimi_runbooks.deploy.rehearsal.tiny_model import TinyModel, tiny_config
from kimi_runbooks.plan import PlanConfig, plan
from kimi_runbooks.procs import group_alive
from kimi_runbooks.report.plan_section import rehearsal_section
from kimi_runbooks.rundir import RunFolder


@pytest.fixture
def started(monkeypatch) -> dict[str, list[Any]]:
    """Record what the launcher builds and starts; run `sleep 60` in place of each command."""
    seen: dict[str, list[Any]] = {"built": [], "started": []}
    bench = SimpleNamespace(python=Path("/bench/bin/python"), version="0.5.23")
    monkeypatch.setattr(sglang_cpu, "tool_env", lambda name: bench)

    def build(folder: RunFolder, model: Any, python: Path) -> TinyModel:
        seen["built"].append(python)
        return TinyModel(folder.mkdir(folder.tiny_model), tiny_config(model, 1024, 1, 2), 0)

    monkeypatch.setattr(sglang_cpu, "build_tiny_model", build)
    monkeypatch.setattr(fleet, "router_python", lambda: "/router/bin/python")
    real = fleet.start_pumped

    def start(argv: list[str], env: dict[str, str], log: Path, secret: str | None) -> Any:
        seen["started"].append((argv, env, log))
        return real(["sleep", "60"], {"PATH": "/usr/bin:/bin"}, log, None)

    monkeypatch.setattr(fleet, "start_pumped", start)
    return seen


def _value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def test_a_replicas_plan_starts_one_cpu_server_per_replica_and_the_router(started, tmp_path):
    config = PlanConfig(
        platform="mi300x", tp=4, replicas=2, router_policy="round_robin", extra_args=["--enable-cache-report"]
    )
    handle = launch(
        plan(config),
        "sglang-cpu",
        folder=RunFolder.create(tmp_path / "run"),
        progress=False,
        preflight=False,
        wait=False,
    )
    try:
        assert len(started["built"]) == 1  # one tiny checkpoint, shared
        (a, env_a, log_a), (b, env_b, log_b), (router, _, router_log) = started["started"]
        for argv, env in ((a, env_a), (b, env_b)):
            assert argv[:3] == ["/bench/bin/python", "-m", "sglang.launch_server"]
            assert _value(argv, "--model-path") == str(handle.folder.tiny_model)
            assert _value(argv, "--device") == "cpu" and "--enable-cache-report" in argv
            assert "--tp" not in argv and "--kv-cache-dtype" not in argv  # decided as for one server
            assert env["SGLANG_USE_CPU_ENGINE"] == "1" and env["OMP_NUM_THREADS"].isdigit()
            assert "HIP_VISIBLE_DEVICES" not in env
        assert _value(a, "--port") != _value(b, "--port")
        assert log_a == handle.folder.server_log and log_b == handle.folder.member_log("replica-1", "sglang")
        assert router[:3] == ["/router/bin/python", "-m", "sglang_router.launch_router"]
        urls = router[router.index("--worker-urls") + 1 : router.index("--worker-urls") + 3]
        assert urls == [f"http://127.0.0.1:{_value(a, '--port')}", f"http://127.0.0.1:{_value(b, '--port')}"]
        assert (
            _value(router, "--policy") == "round_robin" and _value(router, "--port") == handle.base_url.split(":")[-1]
        )
        assert router_log == handle.folder.logs / RunFolder.ROUTER_LOG

        rehearsal = json.loads(handle.folder.rehearsal.read_text())
        assert [m["name"] for m in rehearsal["fleet"]["members"]] == ["replica-0", "replica-1"]
        assert [m["log"] for m in rehearsal["fleet"]["members"]] == ["server.log", "logs/sglang-replica-1.log"]
        rows = {r["item"]: r for r in rehearsal["flags"]}
        assert rows["env HIP_VISIBLE_DEVICES"]["action"] == "not applicable"
        assert rows["--tp"]["action"] == "not applicable"
        shown = rehearsal_section(SimpleNamespace(run_dir=handle.run_dir, rehearsal=True))  # type: ignore[arg-type]
        assert (
            "2 such servers (replica-0, replica-1) served it behind the real sglang-router (policy round_robin)"
            in shown
        )

        record = json.loads(handle.folder.file(RunFolder.PROCESS).read_text())
        groups = [record["pgid"], *(g for g, _ in record["extra_pgids"])]
        assert len(set(groups)) == 3 and all(group_alive(g) for g in groups)
        teardown_run(
            RunFolder.of(handle.run_dir)
        )  # what the watchdog and a later process do: every group from process.json
        assert not any(group_alive(g) for g in groups)
    finally:
        handle.stop()


def test_a_pd_deployment_is_refused_with_the_reason_and_the_fix(started, tmp_path):
    pd = plan(PlanConfig(platform="ascend-a3", deployment="ascend-a3-1p1d-16p-in128k-out1k"))
    with pytest.raises(DeployError, match=r"(?s)cannot run a PD.*transfer engine.*launcher='emulator'"):
        launch(pd, "sglang-cpu", folder=RunFolder.create(tmp_path / "run"), progress=False)
    assert started["started"] == [] and started["built"] == []
    assert not (tmp_path / "run" / RunFolder.PROCESS).exists()
