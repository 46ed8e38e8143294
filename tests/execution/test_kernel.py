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
