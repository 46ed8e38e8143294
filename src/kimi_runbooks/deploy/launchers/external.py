"""Attach to a server someone else runs: never started, never stopped, only checked and recorded.

The server should already be up, so everything that can be known without waiting is checked in
preflight, before anything else happens: the URL (normalised: a missing scheme becomes http://, a
trailing /v1 is dropped; anything else unusable is refused with the fix), the key variable, the
connection (refused, DNS, TLS), the key (HTTP 401 names api_key_env) and the served model name.
Readiness then waits a short time (EXTERNAL_STARTUP_TIMEOUT), not the half hour a launch of
~600 GB of weights may need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ...plan import LaunchPlan
from ...target.health import BaseUrlError, check_server, normalize_base_url
from ..errors import DeployError
from ..preflight import Check, PreflightReport
from ..readiness import wait_ready
from .base import LaunchContext, Launcher, register

if TYPE_CHECKING:
    from ..handle import ServerHandle

EXTERNAL_STARTUP_TIMEOUT = 5.0
"""Seconds an external server gets to answer ready: it is running already, or it is not. Short, so a
runbook pointed at a server that is not there ends, report included, in about 20 s (issue 25 item 7)."""

MODEL_SOURCE = "served_model_name, else the recipe's model name"


class ExternalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    """The running server's root, e.g. http://host:30000 (a trailing /v1 is dropped)."""


@register
class ExternalLauncher(Launcher):
    name = "external"
    Options = ExternalOptions
    owns_server = False
    default_startup_timeout = EXTERNAL_STARTUP_TIMEOUT

    def _base_url(self) -> tuple[str, list[str]]:
        assert isinstance(self.options, ExternalOptions)
        if not self.options.base_url:
            raise DeployError("launcher='external' needs base_url. Fix: pass base_url='http://host:port'.")
        try:
            return normalize_base_url(self.options.base_url)
        except BaseUrlError as exc:
            raise DeployError(str(exc)) from None

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        self._base_url()  # refuse a missing or unusable URL before anything else
        return plan.serve_host, port or plan.serve_port

    def url(self, plan: LaunchPlan, host: str, port: int) -> str:
        return self._base_url()[0]

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        """The chain up to the model name, once, with the environment the launch was given."""
        base, notes = self._base_url()
        report = PreflightReport()
        for note in notes:
            report.checks.append(Check("url", "pass", note))
        result = check_server(
            base,
            ctx.plan.served_name,
            api_key_env=ctx.plan.config.api_key_env,
            environ=ctx.environ,
            health=False,
            model_source=MODEL_SOURCE,
        )
        for step in result.steps:
            if step.name == "url":
                continue
            if step.ok:
                report.checks.append(Check(step.name, "pass", step.detail))
            elif result.permanent:
                report.checks.append(Check(step.name, "fail", step.detail, step.fix))
            else:  # maybe still starting: readiness waits its short timeout for it
                report.checks.append(Check(step.name, "cannot-check", step.detail, step.fix))
        return report

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        handle.base_url = self._base_url()[0]
        handle.log_path = None

    def wait_ready(self, handle: ServerHandle, timeout: float, progress: bool) -> None:
        wait_ready(handle, timeout=timeout, progress=progress, model_source=MODEL_SOURCE)
