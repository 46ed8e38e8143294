"""Fixtures shared by the whole suite: the catalog, an in-thread emulator, a run folder, fake smi
tools on PATH, and the tool environments (skipped on a user's machine when absent, never in CI)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kimi_runbooks.catalog import Catalog, load_catalog
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.tools import envs as toolenv
from tests.support import FAKES, missing

FAKE_SMI_VARS = (
    "FAKE_GPU_COUNT",
    "FAKE_GPU_BUSY",
    "FAKE_GPU_PROCS",
    "FAKE_GPU_NAME",
    "FAKE_SMI_FAIL",
    "FAKE_GPU_POWER",
    "FAKE_GPU_POWER_NA",
    "FAKE_GPU_UTIL",
    "FAKE_AMD_SHAPE",
    "FAKE_NPU_CHIPS",
    "FAKE_NPU_POWER",
)


@pytest.fixture(scope="session", autouse=True)
def private_server_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's servers are registered in a folder of its own, never in the user's
    ~/.cache/kimi-runbooks/servers (whose orphans a test run must not stop, nor add to)."""
    import os

    from kimi_runbooks.deploy.registry import REGISTRY_ENV

    folder = tmp_path_factory.mktemp("server-registry")
    saved = os.environ.get(REGISTRY_ENV)
    os.environ[REGISTRY_ENV] = str(folder)
    yield folder
    if saved is None:
        os.environ.pop(REGISTRY_ENV, None)
    else:
        os.environ[REGISTRY_ENV] = saved


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def emulator_url() -> Iterator[str]:
    """An emulator in a thread of this process (fast latency model), one per test module."""
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False))
    yield url
    stop()


@pytest.fixture
def run_folder(tmp_path: Path) -> RunFolder:
    return RunFolder.create(tmp_path / "run")


@pytest.fixture
def fake_smi_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """PATH = tests/fakes (nvidia-smi, amd-smi, rocm-smi, npu-smi printing recorded formats) + a folder for
    per-test fakes + system dirs, so no real smi tool is seen. Returns that per-test folder."""
    extra = tmp_path / "bin"
    extra.mkdir()
    monkeypatch.setenv("PATH", f"{FAKES}:{extra}:/usr/bin:/bin")
    for var in FAKE_SMI_VARS:
        monkeypatch.delenv(var, raising=False)
    return extra


@pytest.fixture(scope="session")
def require_tool_env() -> Callable[[str], toolenv.ToolEnv]:
    """require_tool_env("bench") -> the ready tool env; skips locally when absent, fails in CI."""

    def get(name: str) -> toolenv.ToolEnv:
        try:
            return toolenv.tool_env(name)
        except toolenv.ToolEnvError as exc:
            missing(f"the {name!r} tool env", f"bash scripts/setup_tool_env.sh {name} ({exc})")
            raise  # unreachable: missing() skips or fails

    return get


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """A test's record_property("summary", text), printed after the run: under pytest-xdist a worker's own
    print never reaches the terminal, while the report's user_properties do."""
    for outcome in ("passed", "failed"):
        for report in terminalreporter.getreports(outcome):
            for name, text in getattr(report, "user_properties", ()):
                if name == "summary":
                    terminalreporter.write_line(f"\n{report.nodeid}:\n{text}")
