"""manifest: hardware inventory from fake smi tools or "unavailable", versions, redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kimi_runbooks.deploy import manifest
from kimi_runbooks.deploy.handle import ServerHandle
from kimi_runbooks.rundir import RunFolder
from tests.support import FAKES


def test_inventory_nvidia(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    inv = manifest.hardware_inventory({"PATH": f"{FAKES}:/usr/bin:/bin", "FAKE_GPU_COUNT": "2"})
    assert inv["tool"] == "nvidia-smi"
    assert [d["name"] for d in inv["devices"]] == ["NVIDIA H200", "NVIDIA H200"]
    assert inv["devices"][0]["driver"] == "570.86.15" and inv["devices"][0]["memory_mib"] == "143771"


def test_inventory_rocm(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "rocm-smi").symlink_to(FAKES / "rocm-smi")
    inv = manifest.hardware_inventory({"PATH": f"{bin_dir}:/usr/bin:/bin"})
    assert inv["tool"] == "rocm-smi"
    assert inv["devices"]["card0"]["Card Series"] == "AMD Instinct MI350X"
    assert inv["devices"]["system"]["Driver version"] == "6.12.12"


def test_inventory_unavailable() -> None:
    assert manifest.hardware_inventory({"PATH": "/nonexistent"}) == "unavailable"


def test_versions_and_commit() -> None:
    versions = manifest.package_versions(("httpx", "surely-not-installed-pkg"))
    assert versions["httpx"] and versions["surely-not-installed-pkg"] is None
    commit = manifest.git_commit()
    assert commit is None or len(commit.split("-")[0]) == 40


def test_manifest_redacts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVER_KEY", "sk-manifest-secret")
    folder = RunFolder(tmp_path, ["MY_SERVER_KEY"])
    handle = ServerHandle(
        launcher="local",
        folder=folder,
        base_url="http://127.0.0.1:1",
        platform="h200",
        model="m",
        command=["sglang", "serve", "--api-key", "sk-manifest-secret"],
        env={"X": "sk-manifest-secret"},
        started_at="t0",
        ready_at="t1",
        server_info={"version": "0.5.9", "max_total_num_tokens": 123, "tp_size": 8, "api_key": "sk-manifest-secret"},
    )
    data = manifest.build_manifest(handle, environ={"PATH": "/nonexistent"})
    path = folder.save_json(folder.manifest, data)
    text = path.read_text()
    assert "sk-manifest-secret" not in text and "<redacted>" in text
    loaded = json.loads(text)
    assert loaded["sglang_version"] == "0.5.9" and loaded["max_total_num_tokens"] == 123
    assert loaded["server_args"]["tp_size"] == 8 and loaded["hardware"] == "unavailable"
    assert loaded["emulated"] is False
