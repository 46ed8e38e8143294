"""Preflight with fake nvidia-smi / rocm-smi / npu-smi on PATH (tests/fakes): refusals name the cause."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from kimi_runbooks import deploy
from kimi_runbooks.deploy import preflight as pf
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.ports import socket_family
from tests.support.stand_ins import ipv6_loopback


def _plan(platform: str, **kw):
    return make_plan({"platform": platform, "port": deploy.free_port(), **kw})


def test_h200_all_visible_and_free_passes(fake_smi_path: Path) -> None:
    report = deploy.run_preflight(_plan("h200"), "local")
    by = {c.name: c for c in report.checks}
    assert by["accelerators"].status == "pass" and "8x H200" in by["accelerators"].detail
    assert by["accelerator memory free"].status == "pass"
    assert by["port free"].status == "pass"
    assert by["model path"].status == "cannot-check"  # a hub id is not a pass
    assert report.ok


def test_too_few_devices_refuses_launch(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FAKE_GPU_COUNT", "4")
    with pytest.raises(deploy.PreflightError) as err:
        deploy.launch(_plan("h200"), "local", RunFolder.create(tmp_path / "run"), progress=False)
    msg = str(err.value)
    assert "launch refused" in msg
    assert "needs 8x H200" in msg and "shows 4 matching" in msg
    assert not (tmp_path / "run" / "server.log").exists()  # nothing started


def test_wrong_device_type_fails(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_NAME", "NVIDIA A100-SXM4-80GB")
    check = pf.check_accelerators(_plan("h200"), dict(os.environ))[0]
    assert check.status == "fail" and "A100" in check.detail


def test_memory_in_use_names_the_process(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("FAKE_GPU_BUSY", "0,3")
    monkeypatch.setenv("FAKE_GPU_PROCS", "4242,sglang::scheduler_TP0,80000")
    with pytest.raises(deploy.PreflightError) as err:
        deploy.launch(_plan("h200"), "local", RunFolder.create(tmp_path / "run"), progress=False)
    msg = str(err.value)
    assert "device 0: 80000 of 143771 MiB in use" in msg and "device 3" in msg
    assert "pid 4242 sglang::scheduler_TP0" in msg
    assert "teardown_run" in msg  # the fix


def test_rocm_smi_too_few_and_busy(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    accel, mem = pf.check_accelerators(_plan("mi350x"), dict(os.environ))
    assert accel.status == "fail" and "needs 4x MI350X" in accel.detail and "rocm-smi shows 2" in accel.detail
    monkeypatch.setenv("FAKE_GPU_COUNT", "4")
    monkeypatch.setenv("FAKE_GPU_BUSY", "1")
    accel, mem = pf.check_accelerators(_plan("mi350x"), dict(os.environ))
    assert accel.status == "pass"
    assert mem.status == "fail" and "device 1" in mem.detail and "rocm-smi --showpids" in mem.detail


def test_npu_smi_counts_devices(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_COUNT", "8")
    plan = make_plan({"platform": "ascend-a3"})
    accel, mem = pf.check_accelerators(plan, dict(os.environ))
    assert accel.status == "fail" and "shows 8 matching" in accel.detail
    monkeypatch.setenv("FAKE_GPU_COUNT", "16")
    assert pf.check_accelerators(plan, dict(os.environ))[0].status == "pass"


def test_missing_tool_is_cannot_check_not_pass(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    checks = pf.check_accelerators(_plan("h200"), dict(os.environ))
    assert [c.status for c in checks] == ["cannot-check", "cannot-check"]
    assert "nvidia-smi not found" in checks[0].detail


def test_broken_driver_is_cannot_check(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SMI_FAIL", "1")
    check = pf.check_accelerators(_plan("h200"), dict(os.environ))[0]
    assert check.status == "cannot-check" and "couldn't communicate" in check.detail


def test_port_in_use_names_owner() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        check = pf.check_port("127.0.0.1", port)
    assert check.status == "fail" and f"port {port}" in check.detail
    assert f"pid {os.getpid()}" in check.detail
    assert pf.check_port("127.0.0.1", port).status == "pass"


def _shards(folder: Path, sizes: list[int], index: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"model-{i:05d}-of-{len(sizes):05d}.safetensors" for i in range(1, len(sizes) + 1)]
    for name, size in zip(names, sizes):
        with (folder / name).open("wb") as fh:
            fh.truncate(size)  # sparse: the size is what counts
    if index:
        import json

        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"weight_map": {f"w{i}": n for i, n in enumerate(names)}})
        )


def test_model_path_checks(tmp_path: Path) -> None:
    model = make_plan({"platform": "h200"}).model
    total = int(model.checkpoint_gb * 1e9)
    good = tmp_path / "good"
    _shards(good, [total // 4] * 4)
    assert pf.check_model_path(make_plan({"platform": "h200", "model_path": str(good)})).status == "pass"

    partial = tmp_path / "partial"
    _shards(partial, [total // 4] * 4)
    (partial / "model-00004-of-00004.safetensors").unlink()
    check = pf.check_model_path(make_plan({"platform": "h200", "model_path": str(partial)}))
    assert check.status == "fail" and "missing" in check.detail

    small = tmp_path / "small"
    _shards(small, [total // 8] * 4, index=False)
    check = pf.check_model_path(make_plan({"platform": "h200", "model_path": str(small)}))
    assert check.status == "fail" and "shards total" in check.detail

    check = pf.check_model_path(make_plan({"platform": "h200", "model_path": str(tmp_path / "nope")}))
    assert check.status == "fail" and "does not exist" in check.detail


def test_shm_threshold() -> None:
    assert pf.check_shm(min_gib=0.001).status == "pass"
    check = pf.check_shm(min_gib=10**9)
    assert check.status == "fail" and "--shm-size" in check.fix


def test_docker_checks(fake_smi_path: Path) -> None:
    assert pf.check_docker("img", {"PATH": "/nonexistent"})[0].status == "fail"
    fake = fake_smi_path / "docker"
    fake.write_text(
        '#!/bin/sh\ncase "$1" in version) echo 28.2.2 ;; image) echo "Error: No such image: $5" >&2; exit 1 ;; esac\n'
    )
    fake.chmod(0o755)
    checks = pf.check_docker("lmsysorg/sglang:v0.5.9", dict(os.environ))
    assert [c.status for c in checks] == ["pass", "fail"]
    assert "docker pull lmsysorg/sglang:v0.5.9" in checks[1].fix


def test_emulator_needs_only_a_port(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_COUNT", "0")
    report = deploy.run_preflight(_plan("h200"), "emulator")
    assert [c.name for c in report.checks] == ["port free"] and report.ok


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_port_check_on_ipv6_loopback() -> None:
    assert socket_family("::1") == socket.AF_INET6 and socket_family("localhost") == socket.AF_INET
    with socket.socket(socket.AF_INET6) as sock:
        sock.bind(("::1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        check = pf.check_port("::1", port)
        assert check.status == "fail" and "in use" in check.detail and f"pid {os.getpid()}" in check.detail
    assert pf.check_port("::1", port).status == "pass"


def test_port_check_on_an_address_not_here_names_the_fix() -> None:
    check = pf.check_port("192.0.2.1", 30000)  # TEST-NET-1: never an address of this machine
    assert check.status == "fail" and "not an address of this machine" in check.detail
    assert "127.0.0.1" in check.fix


def test_a_pinned_plan_checks_only_its_devices(fake_smi_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an 8-GPU MI350X node, the tp-4 recipe pinned to 0-3: memory held on device 6 is not in the way
    monkeypatch.setenv("FAKE_GPU_COUNT", "8")
    monkeypatch.setenv("FAKE_GPU_BUSY", "6")
    accel, mem = pf.check_accelerators(_plan("mi350x"), dict(os.environ))
    assert accel.status == "pass" and mem.status == "pass"
    monkeypatch.setenv("FAKE_GPU_BUSY", "2")
    assert pf.check_accelerators(_plan("mi350x"), dict(os.environ))[1].status == "fail"
    # pinned to 4-7 on a node that shows only 4 devices: the missing indices are named
    monkeypatch.setenv("FAKE_GPU_COUNT", "4")
    monkeypatch.delenv("FAKE_GPU_BUSY")
    accel = pf.check_accelerators(make_plan({"platform": "mi350x", "device_ids": [4, 5, 6, 7]}), dict(os.environ))[0]
    assert accel.status == "fail" and "[4, 5, 6, 7]" in accel.detail and "--device-ids" in accel.fix
