"""Why a deployment did not start: each error says what failed and how to fix it."""

from __future__ import annotations

from .diagnose import Diagnosis
from .preflight import PreflightReport


class DeployError(RuntimeError):
    """The server did not start; `diagnosis` says why in one sentence, `excerpt` shows the log tail."""

    def __init__(self, message: str, diagnosis: Diagnosis | None = None, excerpt: str = "") -> None:
        self.diagnosis = diagnosis
        self.excerpt = excerpt
        text = message + (f"\n--- last lines of the server log ---\n{excerpt}" if excerpt else "")
        super().__init__(text)


class PlanError(DeployError):
    """The plan has validation errors: nothing was started."""


class PreflightError(DeployError):
    """A preflight check failed: nothing was started."""

    def __init__(self, report: PreflightReport) -> None:
        self.report = report
        lines = "\n".join(f"  - {c}" for c in report.failures)
        super().__init__(f"launch refused: {len(report.failures)} preflight check(s) failed\n{lines}")


class DeployTimeout(DeployError):
    """The server did not become ready in time."""
