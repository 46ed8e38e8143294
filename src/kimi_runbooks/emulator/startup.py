"""The simulated start phase: readiness clock and SGLang-like start-up log lines.

A deploy stage polls /health and tails the server log to show "loading weights",
"allocating KV cache", "capturing CUDA graphs"; the emulator prints lines with
SGLang's wording spread over ``startup_seconds`` (times ``time_scale``) and answers
503 from health endpoints until the last line, "The server is fired up and ready to roll!".
"""

from __future__ import annotations

import asyncio
import sys
import time
from datetime import datetime

from .settings import EmulatorSettings

READY_LINE = "The server is fired up and ready to roll!"
BANNER = "kimi-runbooks SGLang emulator: EMULATED server, no model and no GPU are used."


def phase_lines(settings: EmulatorSettings) -> list[tuple[float, str]]:
    """(fraction of the start phase, message) pairs, in order."""
    capacity = settings.profile.max_total_num_tokens
    kv_gb = capacity * 70272 / 2**30
    return [
        (0.00, BANNER),
        (
            0.00,
            f"server_args=ServerArgs(model_path='{settings.resolved_model_path}', "
            f"reasoning_parser='{settings.reasoning_parser}', tool_call_parser='{settings.tool_call_parser}', "
            f"context_length={settings.max_model_len}, emulated=True)",
        ),
        (0.02, "Init torch distributed begin."),
        (0.05, "Init torch distributed ends. mem usage=0.00 GB"),
        (0.08, "Load weight begin. avail mem=139.02 GB"),
        (
            0.60,
            f"Load weight end. type={settings.capabilities.architectures[0]}, dtype=torch.bfloat16, "
            "avail mem=67.61 GB, mem usage=71.41 GB.",
        ),
        (0.65, f"KV Cache is allocated. #tokens: {capacity}, KV size: {kv_gb:.2f} GB"),
        (0.70, "Capture cuda graph begin. This can take up to several minutes. avail mem=20.35 GB"),
        (0.92, "Capture cuda graph end. Time elapsed: 0.00 s. mem usage=1.90 GB. avail mem=18.45 GB."),
        (
            0.95,
            f"max_total_num_tokens={capacity}, chunked_prefill_size=8192, "
            f"max_prefill_tokens=16384, max_running_requests="
            f"{settings.profile.max_running_requests}, context_len={settings.max_model_len}",
        ),
        (1.00, READY_LINE),
    ]


def log_line(message: str) -> None:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    print(f"[{stamp} TP0] {message}", file=sys.stderr, flush=True)


class StartupClock:
    """Tracks whether the simulated start phase is over."""

    def __init__(self, settings: EmulatorSettings) -> None:
        self.duration = max(settings.startup_seconds, 0.0) * settings.time_scale
        self.started_at = time.monotonic()
        self.wall_started_at = time.time()
        self.settings = settings

    def restart(self) -> None:
        self.started_at = time.monotonic()
        self.wall_started_at = time.time()

    @property
    def ready(self) -> bool:
        return time.monotonic() - self.started_at >= self.duration

    async def print_phases(self) -> None:
        """Print the start-up lines at their scheduled fractions of the start phase."""
        for fraction, message in phase_lines(self.settings):
            delay = self.started_at + fraction * self.duration - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            if self.settings.log_startup:
                log_line(message)
