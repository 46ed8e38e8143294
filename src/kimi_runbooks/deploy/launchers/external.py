"""Attach to a server someone else runs: never started, never stopped, only checked and recorded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from ...plan import LaunchPlan
from ..errors import DeployError
from .base import LaunchContext, Launcher, register

if TYPE_CHECKING:
    from ..handle import ServerHandle


class ExternalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str | None = None
    """The running server, e.g. http://host:30000."""


@register
class ExternalLauncher(Launcher):
    name = "external"
    Options = ExternalOptions
    owns_server = False

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        assert isinstance(self.options, ExternalOptions)
        if not self.options.base_url:
            raise DeployError("launcher='external' needs base_url. Fix: pass base_url='http://host:port'.")
        return plan.serve_host, port or plan.serve_port

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        assert isinstance(self.options, ExternalOptions) and self.options.base_url
        handle.base_url = self.options.base_url.rstrip("/")
        handle.log_path = None
