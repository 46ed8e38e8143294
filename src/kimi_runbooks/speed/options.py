"""The speed stage's settings (`SpeedOptions`): one typed declaration instead of a long keyword list.

`run_scenarios(scenarios, target, folder, options)` reads them; keyword settings are still accepted
(`run_scenarios(..., seed=1)`) and become a SpeedOptions, so a misspelt one fails with the valid names.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..plan import MemoryPlan
from .argv import DEFAULT_TIMEOUT_S
from .repeats import check_repeats


@dataclass(frozen=True)
class SpeedOptions:
    """How the speed stage runs its scenarios (see run_scenarios for what each changes)."""

    tokenizer: str | Path | None = None
    """The served model's tokenizer (local dir) for token counts; None: the target's or the emulator's."""
    offline: bool = False
    """No model hub: the HF offline environment for the bench client."""
    command_prefix: Sequence[str] | None = None
    """Run bench_serving inside something (`docker exec ...`); its output path must be visible there."""
    python: str | None = None
    """The interpreter with sglang (default: the `bench` tool env when it exists, else python3)."""
    seed: int | None = None
    dataset_path: str | Path | None = None
    timeout_s: float | Mapping[str, float] | None = DEFAULT_TIMEOUT_S
    """Per scenario, or per scenario id."""
    resume: bool = True
    """Skip scenarios bench.jsonl already holds as finished."""
    memory_plan: MemoryPlan | None = None
    """The plan's KV capacity: scenarios that cannot fit are recorded over-capacity, not run."""
    devices: int | None = None
    platform: str | None = None
    env: Mapping[str, str] | None = None
    """More environment for the bench client."""
    health_check: bool = True
    verify_tokens: bool = True
    """One probe request per scenario checks the token accounting first (tokens.py)."""
    progress: bool = True
    sample_metrics: bool = True
    """Sample the server's /metrics beside each scenario (observe.py)."""
    launcher: str | None = None
    smi: str | None = None
    """Device telemetry tool (default: the platform's) where the devices are on this host."""
    price_per_device_hour: float | None = None
    price_source: str | None = None
    stop_when_saturated: bool = False
    """Skip the rest of a concurrency sweep once the server queues and throughput stops growing."""
    answer_probe: int = 3
    """Streamed chat requests after each ok scenario (any backend) timing the first reasoning and the first
    answer token (answer_probe.py); 0: none."""
    worker: bool = True
    """One long-lived bench_serving process (worker.py) instead of one process per scenario."""
    repeats: int | None = None
    """Runs per scenario for scenarios that do not set their own `repeats` (repeats.py: each run a row,
    the mean with a 95% Student t interval in the report); None: once."""

    def __post_init__(self) -> None:
        check_repeats(self.repeats, "SpeedOptions")

    @classmethod
    def of(cls, options: SpeedOptions | None = None, settings: Mapping[str, Any] | None = None) -> SpeedOptions:
        """`options` with `settings` applied; an unknown setting names the nearest valid one."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in settings or {} if k not in names]
        if unknown:
            hints = [
                f"{k!r}"
                + (f" (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(k, names, 1)) else "")
                for k in unknown
            ]
            raise TypeError(f"unknown speed setting(s) {', '.join(hints)}. Fix: one of {', '.join(names)}")
        return dataclasses.replace(options or cls(), **dict(settings or {}))
