"""The project's kernel drops ipykernel's TCP eavesdropping warning on loopback only, and a runbook
run through the papermill CLI prints neither that warning nor a parameter parse warning."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from kimi_runbooks.execution.kernel import LoopbackTransportWarning
from kimi_runbooks.paths import NOTEBOOKS_DIR


def _record(text: str) -> logging.LogRecord:
    return logging.LogRecord("IPKernelApp", logging.WARNING, __file__, 1, text, None, None)


@pytest.fixture
def kernel_app(monkeypatch: pytest.MonkeyPatch):
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    yield app
    IPKernelApp.clear_instance()


@pytest.mark.parametrize(("ip", "shown"), [("127.0.0.1", False), ("::1", False), ("10.0.0.5", True)])
def test_warning_dropped_only_on_loopback(kernel_app, ip: str, shown: bool) -> None:
    kernel_app.ip = ip
    flt = LoopbackTransportWarning()
    assert flt.filter(_record("Kernel is running over TCP without encryption. All ...")) is shown
    assert flt.filter(_record("any other warning")) is True


def test_papermill_cli_output_is_clean(tmp_path) -> None:
    papermill = [sys.executable, "-m", "papermill"]
    proc = subprocess.run(
        [
            *papermill,
            str(NOTEBOOKS_DIR / "command_generator.ipynb"),
            str(tmp_path / "out.ipynb"),
            "-p",
            "platform",
            "mi350x",
            "--cwd",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    output = proc.stdout + proc.stderr
    assert "without encryption" not in output, "is the kernelspec installed? Fix: make setup"
    assert "Unable to parse" not in output and "Passed unknown parameter" not in output


def test_install_writes_the_speed_kernelspec_that_prewarms_the_bench_worker(tmp_path) -> None:
    import json

    from kimi_runbooks.execution import prewarm
    from kimi_runbooks.execution.kernel import install

    plain = json.loads(install(prefix=str(tmp_path)).read_text())
    speed = json.loads((tmp_path / "share/jupyter/kernels" / prewarm.SPEED_KERNEL / "kernel.json").read_text())
    assert speed["argv"] == plain["argv"] and "kimi_runbooks.execution.kernel" in plain["argv"]
    assert speed["env"] == {prewarm.PREWARM_ENV: prewarm.PREWARM_BENCH} and prewarm.PREWARM_ENV not in plain.get(
        "env", {}
    )


def test_the_speed_notebook_names_the_prewarming_kernel_and_the_others_python3() -> None:
    import nbformat

    from kimi_runbooks.execution.prewarm import SPEED_KERNEL

    names = {
        p.name: nbformat.read(str(p), as_version=4).metadata.kernelspec.name for p in NOTEBOOKS_DIR.glob("*.ipynb")
    }
    assert names.pop("speed_bench.ipynb") == SPEED_KERNEL
    assert set(names.values()) == {"python3"}


def test_prewarm_starts_nothing_unless_asked_or_inside_a_runbook(monkeypatch) -> None:
    import os

    from kimi_runbooks.execution import prewarm
    from kimi_runbooks.procs import RUN_TOKEN_ENV

    monkeypatch.delenv(prewarm.PREWARM_ENV, raising=False)
    assert prewarm.start_if_asked() is None
    monkeypatch.setenv(prewarm.PREWARM_ENV, prewarm.PREWARM_BENCH)
    monkeypatch.setenv(RUN_TOKEN_ENV, "a-runbook")  # the runbook started its own before its stages
    assert prewarm.start_if_asked() is None
    assert prewarm.WORKER_ENV not in os.environ
