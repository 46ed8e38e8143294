"""The shape of a params/scenarios file: what one benchmark scenario asks bench_serving to run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from .values import ArgValue, Strict

# --------------------------------------------------------------------------- scenarios


class TraceDesign(Strict):
    """A synthetic multi-turn trace shaped like a coding agent's sessions (speed/traces.py makes it)."""

    conversations: int = Field(ge=1)
    turns: int = Field(ge=1)
    system_tokens: int = Field(ge=1)
    """The system prompt (tool and repository instructions): shared by every conversation when shared_system."""
    first_tokens: int = Field(ge=1)
    """The first user message (the task)."""
    turn_tokens: int = Field(ge=1)
    """What each later turn adds (tool output, the next instruction)."""
    output_len: int = Field(ge=1)
    """Tokens the server generates per turn (bench_serving --sharegpt-output-len)."""
    shared_system: bool = True
    context_length: int | None = Field(default=None, ge=1)
    """Turns stop before the context passes this (the plan's context length when None and planned)."""


class Scenario(Strict):
    id: str
    title: str | None = None
    dataset: Literal[
        "random", "random-ids", "sharegpt", "generated-shared-prefix", "image", "agentic-trace", "mooncake"
    ]
    input_len: int | None = None
    output_len: int | None = None
    num_prompts: int
    max_concurrency: int | None = None
    request_rate: float | str | None = None
    range_ratio: float | None = None
    seed: int | None = None
    warmup_requests: int | None = None
    backend: Literal["sglang", "sglang-oai", "sglang-oai-chat"] = "sglang"
    extra_args: dict[str, ArgValue | None] = Field(default_factory=dict)
    matrix: dict[str, int] | None = None
    slo: dict[str, float] | None = None
    """Service-level objectives in ms (ttft_ms, tpot_ms, e2e_ms) for goodput; None: published targets."""
    trace: TraceDesign | None = None
    """agentic-trace / mooncake: the synthetic trace to generate (a dataset_path given to the speed stage
    replays the user's own file instead)."""
    repeats: int | None = None
    """Run the scenario this many times (each run its own result row; the report shows their mean and
    95% interval, speed/repeats.py); None: the speed stage's `repeats`, else once."""

    @field_validator("repeats")
    @classmethod
    def _repeats(cls, value: int | None) -> int | None:
        if value is not None and not 1 <= value <= 100:
            raise ValueError(
                f"repeats must be a whole number from 1 to 100 (got {value}). Fix: e.g. repeats: 3 for a mean "
                "with a 95% interval, or leave it out for one run"
            )
        return value


class ScenarioSet(Strict):
    set: str
    source: str
    scenarios: list[Scenario]
