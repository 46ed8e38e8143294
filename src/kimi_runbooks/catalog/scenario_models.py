"""The shape of a params/scenarios file: what one benchmark scenario asks bench_serving to run."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .values import ArgValue, Strict

# --------------------------------------------------------------------------- scenarios

MAX_REPEATS = 100
"""Runs of one scenario at most, whether a scenario file or the runbook's `repeats` asks for them."""


def checked_repeats(value: int | None, subject: str, fix: str) -> int | None:
    """`value` when it is None or 1..MAX_REPEATS: the one bound on repeats, for a scenario file and
    for the runbook's parameter, each with its own `subject` (how the message opens) and `fix`."""
    if value is not None and not 1 <= value <= MAX_REPEATS:
        raise ValueError(f"{subject}must be a whole number from 1 to {MAX_REPEATS} (got {value}). Fix: {fix}")
    return value


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
    """Turns stop before the context passes this (None: the served model's, /v1/models max_model_len)."""


class ThinkTime(Strict):
    """The pause between a reply and the next turn of a session (a user reading, an agent's tools
    running), as AIPerf's --conversation-turn-delay-mean/-stddev: drawn per turn after the first from
    `distribution` with the scenario's seed, in ms of the model's clock (an emulator at time scale s
    waits s x as long, as it answers s x as fast). A trace's own delays and timestamps win."""

    distribution: Literal["constant", "normal", "exponential"]
    """constant: mean_ms every turn; normal: mean_ms +- stddev_ms, negative draws clipped to 0
    (AIPerf's); exponential: mean mean_ms (a memoryless user)."""
    mean_ms: float = Field(ge=0)
    stddev_ms: float = Field(default=0.0, ge=0)


SLO_KEYS = ("ttft_ms", "tpot_ms", "e2e_ms")


class SearchSpec(Strict):
    """The operating point: the highest max_concurrency (or request_rate) in [low, high] whose run
    still meets the scenario's SLO, found by bisection (speed/operating_point.py), each probe a
    real bench_serving run; it stops when the bracket is one step wide."""

    over: Literal["max_concurrency", "request_rate"]
    low: float = Field(gt=0)
    high: float = Field(gt=0)
    step: float = Field(gt=0)
    """Probes sit on low + k x step; the answer is within one step of the true limit."""
    criterion: Literal["attainment", "mean", "median", "p90", "p95", "p99"] = "attainment"
    """attainment: at least `attainment` of the requests met every SLO (goodput.py); a statistic:
    bench_serving's <stat>_{ttft,tpot,e2e_latency}_ms of the probe is at most each SLO."""
    attainment: float = Field(default=0.9, gt=0, le=1)
    metrics: list[Literal["ttft_ms", "tpot_ms", "e2e_ms"]] | None = None
    """Which of the scenario's SLOs the search holds the probes to (None: all of them)."""
    prompts_per_value: float | None = Field(default=None, gt=0)
    """A probe's num_prompts = max(num_prompts, ceil(this x value), the fewest requests that can judge
    the criterion's percentile): prompts per concurrent request over max_concurrency, seconds of
    arrivals over request_rate; None: num_prompts (or that fewest) as given."""
    knee_sweep: bool = True
    """Before bisecting, double from low (low, 2 low, 4 low, ... high) until the SLO is missed or output
    throughput stops growing (the saturation knee, as GuideLLM's sweep finds it); the bisection then
    searches only the bracket the sweep left, and never above the knee."""
    confirm_repeats: int = Field(default=3, ge=0, le=10)
    """Fresh runs at the value found that must each meet the SLO before it is the operating point
    (their spread gives its 95% interval); 0: no confirmation."""


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
    arrival: Literal["poisson", "constant"] | None = None
    """How requests arrive at request_rate: poisson (bench_serving's own --request-rate: exponential
    gaps), constant (evenly spaced: replayed as a generated mooncake trace, speed/arrivals.py);
    None: bench_serving's default (all at once unless request_rate is set, then Poisson)."""
    think_time: ThinkTime | None = None
    """agentic-trace / mooncake sessions: the pause before each turn after the first (speed/sessions.py);
    None: the trace's own delays, else none."""
    search: SearchSpec | None = None
    """Search for the operating point instead of running the scenario once (speed/operating_point.py)."""

    repeats: int | None = None
    """Run the scenario this many times (each run its own result row; the report shows their mean and
    95% interval, speed/repeats.py); None: the speed stage's `repeats`, else once."""

    @field_validator("repeats")
    @classmethod
    def _repeats(cls, value: int | None) -> int | None:
        return checked_repeats(
            value, "repeats ", "e.g. repeats: 3 for a mean with a 95% interval, or leave it out for one run"
        )

    @model_validator(mode="after")
    def _search_and_arrival(self) -> Scenario:
        problems = [p for p in (*_search_problems(self), *_arrival_problems(self), *_session_problems(self)) if p]
        if problems:
            raise ValueError(f"scenario {self.id}: " + "; ".join(problems))
        return self


def _finite_rate(value: float | str | None) -> bool:
    try:
        rate = float(value) if value is not None else math.nan
    except ValueError:
        return False
    return math.isfinite(rate) and rate > 0


def _search_problems(s: Scenario) -> list[str]:
    spec = s.search
    if spec is None:
        return []
    out = []
    slo = {k: v for k, v in (s.slo or {}).items() if k in SLO_KEYS}
    if not slo:
        out.append(
            "a search needs an SLO to meet (rule: operating-point-needs-slo). "
            "Fix: add slo: {tpot_ms: 50} (any of ttft_ms, tpot_ms, e2e_ms, in ms)"
        )
    missing = [m for m in spec.metrics or [] if m not in slo]
    if missing:
        out.append(f"search.metrics {missing} are not in slo {sorted(slo)}. Fix: add them to slo or drop them")
    if spec.low >= spec.high:
        out.append(f"search.low {spec.low:g} is not below search.high {spec.high:g}. Fix: low < high")
    elif spec.step > spec.high - spec.low:
        out.append(
            f"search.step {spec.step:g} is wider than the bracket [{spec.low:g}, {spec.high:g}]. Fix: a smaller step"
        )
    if spec.over == "max_concurrency":
        if not all(float(v).is_integer() for v in (spec.low, spec.high, spec.step)):
            out.append("a search over max_concurrency takes whole numbers. Fix: integer low, high and step")
        if s.max_concurrency is not None:
            out.append("max_concurrency is what the search sets. Fix: remove max_concurrency from the scenario")
    elif s.request_rate is not None:
        out.append("request_rate is what the search sets. Fix: remove request_rate from the scenario")
    if s.matrix:
        out.append("a search and a matrix both vary the scenario. Fix: keep one")
    if s.repeats is not None and s.repeats > 1:
        out.append(
            "a search runs each probe once (rule: search-probes-run-once). "
            "Fix: remove repeats from the scenario, or run the found point as its own scenario with repeats"
        )
    return out


def _session_problems(s: Scenario) -> list[str]:
    out = []
    if s.think_time is not None and s.dataset not in ("agentic-trace", "mooncake"):
        out.append(
            f"think_time pauses between the turns of a session; dataset {s.dataset} has none. "
            "Fix: dataset agentic-trace or mooncake, or remove think_time"
        )
    if (
        s.dataset == "mooncake"
        and s.backend != "sglang-oai-chat"
        and (s.think_time is not None or (s.trace is not None and s.trace.turns > 1))
    ):
        out.append(
            "multi-round mooncake sessions (trace.turns > 1) and think time are replayed round by round with "
            "the server's replies as history, which needs a chat backend (rule: mooncake-sessions-need-chat; "
            "bench_serving's own --mooncake-num-rounds sends a session's rounds at once with placeholder "
            "replies). Fix: backend: sglang-oai-chat"
        )
    return out


def _arrival_problems(s: Scenario) -> list[str]:
    if s.arrival is None:
        return []
    searched = s.search is not None and s.search.over == "request_rate"
    out = []
    if not searched and not _finite_rate(s.request_rate):
        out.append(
            f"arrival: {s.arrival} paces requests at request_rate, which is {s.request_rate!r} "
            "(rule: arrival-needs-rate). Fix: a finite request_rate in requests/s, or search over request_rate"
        )
    if s.arrival == "constant":
        if s.dataset not in ("random", "random-ids") or not (s.input_len and s.output_len):
            out.append(
                "constant arrivals are replayed as a generated mooncake trace (SGLang 0.5.23's bench_serving "
                "has no --burstiness; its --request-rate is Poisson only), which stands for a random "
                "workload. Fix: dataset random or random-ids with input_len and output_len"
            )
        if s.backend != "sglang":
            out.append(
                "bench_serving schedules a mooncake trace by its timestamps only with the native backend. "
                "Fix: backend: sglang (or arrival: poisson)"
            )
    return out


class ScenarioSet(Strict):
    set: str
    source: str
    scenarios: list[Scenario]
