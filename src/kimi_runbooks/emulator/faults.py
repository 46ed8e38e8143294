"""Runtime side of the ``--fault`` modes that act while serving.

Start-up faults (slow-start, crash-on-start) live in startup.py and cli.py; content
faults (bad-tool-json, no-reasoning) are applied where replies are shaped, the tool-calling
faults users report (empty-after-think, markers-in-content, ...) in tool_faults.py.  This module
holds the two that need state across requests: the deterministic HTTP-500 draw and the
mid-stream crash countdown.
"""

from __future__ import annotations

import os
import random
import sys

from .settings import EmulatorSettings

CRASH_EXIT_CODE = 1


class FaultInjector:
    """Decides, request by request, whether a runtime fault fires."""

    def __init__(self, settings: EmulatorSettings) -> None:
        self.settings = settings
        self._rng = random.Random(f"http-500:{settings.seed}")
        self._streams_started = 0

    def should_fail_http_500(self) -> bool:
        """One deterministic draw per generation request (sequence fixed by the seed)."""
        if not self.settings.fault_is("http-500-rate"):
            return False
        rate = (self.settings.fault.value if self.settings.fault else None) or 0.0
        return self._rng.random() < rate

    def crash_point(self, planned_tokens: int) -> int | None:
        """For the stream that should crash, the token index at which the process dies."""
        if not self.settings.fault_is("crash-mid-stream"):
            return None
        self._streams_started += 1
        nth = int((self.settings.fault.value if self.settings.fault else None) or 1)
        if self._streams_started != max(nth, 1):
            return None
        return max(1, planned_tokens // 2)

    @staticmethod
    def crash_now() -> None:
        """Die the way a crashed scheduler process takes an SGLang server down: abruptly."""
        print(
            "[emulator] fault crash-mid-stream: scheduler process died; exiting abruptly", file=sys.stderr, flush=True
        )
        os._exit(CRASH_EXIT_CODE)
