"""Launchers whose server is a local process group behind the redacting log pump."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...procs import STOP_GRACE_SECONDS, cmdline, group_alive, kill_group, start_ticks
from ...rundir import RunFolder
from ..logpump import is_pump, start_pumped
from .base import Launcher

if TYPE_CHECKING:
    from ..handle import ServerHandle


class ProcessGroupLauncher(Launcher):
    """Starts argv behind the log pump in a new session; stopping kills the whole group."""

    def start_process(self, handle: ServerHandle, argv: list[str], env: dict[str, str]) -> None:
        assert handle.log_path is not None
        handle.process = start_pumped(argv, env, handle.log_path, handle.api_key_env)
        handle.pid = handle.pgid = handle.process.pid

    def stop(self, handle: ServerHandle) -> None:
        if handle.pgid:
            kill_group(handle.pgid, handle.process)

    @classmethod
    def stop_recorded(cls, folder: RunFolder, record: dict[str, Any], grace: float = STOP_GRACE_SECONDS) -> list[str]:
        extra = [msg for g, ticks in record.get("extra_pgids") or [] for msg in cls._stop_group(g, ticks, grace)]
        return cls._stop_group(record.get("pgid"), record.get("pgid_ticks"), grace) + extra

    @staticmethod
    def _stop_group(pgid: Any, ticks: Any, grace: float) -> list[str]:
        if not pgid:
            return []
        leader = cmdline(int(pgid))
        recycled = leader is not None and (
            not is_pump(leader) or (ticks is not None and start_ticks(int(pgid)) not in (None, int(ticks)))
        )
        if (leader is None and not group_alive(int(pgid))) or recycled:
            return []  # gone, or the pid was recycled by an unrelated process
        if not group_alive(int(pgid)):
            return []
        kill_group(int(pgid), grace=grace)
        return [f"stopped process group {pgid}"]
