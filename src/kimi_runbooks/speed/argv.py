"""Scenario + target -> the `python3 -m sglang.bench_serving ...` argv.

Kept pure (no I/O) so the exact command a runbook runs can be shown, diffed against the
cookbook pages' printed commands and unit-tested. The API key never appears here: bench_serving reads
it from $OPENAI_API_KEY, which the runner sets in the child's environment only.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..catalog import Scenario
from ..plan.shell import args_to_argv
from .arrivals import arrival_argv, is_constant
from .sessions import session_replay

log = logging.getLogger(__name__)

BENCH_MODULE = "sglang.bench_serving"
DEFAULT_PYTHON = "python3"
DEFAULT_TIMEOUT_S = 3600.0


class BenchConfigError(ValueError):
    """A scenario that cannot run as configured; the message names the rule and the fix."""


class OfflineDatasetWarning(UserWarning):
    """`random` was replaced by `random-ids` because the run is offline."""


@dataclass(frozen=True)
class BenchTarget:
    """Where the benchmark client sends requests (a RunHandle carries the same fields)."""

    base_url: str | None = None
    model: str | None = None
    host: str | None = None
    port: int | None = None
    api_key_env: str | None = None
    emulated: bool = False
    rehearsal: bool = False
    """Real SGLang serving a tiny model on the CPU (launcher sglang-cpu): rows are labelled so."""

    @classmethod
    def of(cls, target: Any) -> BenchTarget:
        """A BenchTarget from a RunHandle, a BenchTarget, a dict or a base URL string."""
        if isinstance(target, BenchTarget):
            return target
        if isinstance(target, str):
            return cls(base_url=target)
        if isinstance(target, dict):
            fields = {k: target.get(k) for k in cls.__dataclass_fields__ if k in target}
            return cls(**fields)  # type: ignore[arg-type]
        return cls(
            base_url=getattr(target, "base_url", None),
            model=getattr(target, "model", None),
            api_key_env=getattr(target, "api_key_env", None),
            emulated=bool(getattr(target, "emulated", False)),
            rehearsal=bool(getattr(target, "rehearsal", False)),
        )

    @property
    def url(self) -> str:
        if self.base_url:
            return self.base_url.rstrip("/")
        return f"http://{self.host or '127.0.0.1'}:{self.port or 30000}"


def _has_flag(extra: dict[str, Any], flag: str) -> bool:
    return flag in extra and extra[flag] not in (None, False)


def dataset_name(scenario: Scenario, offline: bool) -> str:
    """The --dataset-name to pass; `random` becomes `random-ids` offline (same token counts); a
    constant arrival is replayed as a mooncake trace (speed/arrivals.py)."""
    if is_constant(scenario):
        return "mooncake"
    if session_replay(scenario):
        return "agentic-trace"  # mooncake sessions, converted by speed/sessions.py
    if offline and scenario.dataset == "random":
        message = (
            f"scenario {scenario.id}: offline run, so --dataset-name random-ids replaces random "
            "(random downloads ShareGPT text at run time; random-ids sends random token ids with "
            "the same input/output lengths, so throughput and latency are comparable but the "
            "prompt text is not natural language)"
        )
        warnings.warn(message, OfflineDatasetWarning, stacklevel=3)
        log.warning(message)
        return "random-ids"
    return scenario.dataset


@dataclass(frozen=True)
class BenchClient:
    """How bench_serving is run, whatever the scenario: where, with which tokenizer and data."""

    python: str | None = None
    """The interpreter that has sglang installed (default `python3`)."""
    command_prefix: Sequence[str] | None = None
    """Goes in front, e.g. ["docker", "exec", "ctr"]."""
    tokenizer: str | Path | None = None
    offline: bool = False
    """No downloads: random becomes random-ids, sharegpt needs dataset_path."""
    seed: int | None = None
    """Used when the scenario sets none (the scenario's seed wins)."""
    dataset_path: str | Path | None = None


def build_argv(
    scenario: Scenario, target: Any, *, output_file: str | Path, client: BenchClient | None = None
) -> list[str]:
    """The full bench_serving command for one scenario against one server, run as `client` says."""
    c = client or BenchClient()
    tgt = BenchTarget.of(target)
    extra = dict(scenario.extra_args)
    if c.dataset_path is not None:
        extra["--dataset-path"] = str(c.dataset_path)
    if scenario.dataset == "sharegpt" and c.offline and not _has_flag(extra, "--dataset-path"):
        raise BenchConfigError(
            f"scenario {scenario.id} uses --dataset-name sharegpt, which bench_serving downloads "
            "at run time, but offline=True forbids downloads. Fix: download "
            "ShareGPT_V3_unfiltered_cleaned_split.json once and pass dataset_path=<that file> "
            "(or add '--dataset-path' to the scenario's extra_args), or run with offline=False."
        )
    if scenario.dataset in ("random", "random-ids") and not (scenario.input_len and scenario.output_len):
        raise BenchConfigError(
            f"scenario {scenario.id}: dataset {scenario.dataset} needs input_len and output_len. "
            "Fix: set both in params/scenarios."
        )
    _check_trace_backend(scenario, extra, c.dataset_path)
    if is_constant(scenario) and not (c.dataset_path is not None or _has_flag(extra, "--dataset-path")):
        raise BenchConfigError(
            f"scenario {scenario.id}: arrival: constant replays a generated mooncake trace. Fix: run it "
            "through the speed stage (which writes the trace), or pass dataset_path=<its arrivals file>."
        )
    lengths = not is_constant(scenario)  # a mooncake record carries its own lengths
    argv: list[str] = [*(c.command_prefix or []), c.python or DEFAULT_PYTHON, "-m", BENCH_MODULE]
    argv += ["--backend", scenario.backend]
    if tgt.base_url:
        argv += ["--base-url", tgt.base_url.rstrip("/")]
    else:
        argv += ["--host", tgt.host or "127.0.0.1", "--port", str(tgt.port or 30000)]
    if tgt.model:
        argv += ["--model", tgt.model]
    if c.tokenizer is not None:
        argv += ["--tokenizer", str(c.tokenizer)]
    argv += ["--dataset-name", dataset_name(scenario, c.offline)]
    if scenario.input_len is not None and lengths:
        argv += ["--random-input-len", str(scenario.input_len)]
    if scenario.output_len is not None and lengths:
        argv += ["--random-output-len", str(scenario.output_len)]
    if scenario.range_ratio is not None and lengths:
        argv += ["--random-range-ratio", _fmt(scenario.range_ratio)]
    argv += ["--num-prompts", str(scenario.num_prompts)]
    if scenario.max_concurrency is not None:
        argv += ["--max-concurrency", str(scenario.max_concurrency)]
    if scenario.request_rate is not None and lengths:  # mooncake replays its timestamps instead
        argv += ["--request-rate", _fmt(scenario.request_rate)]
    run_seed = scenario.seed if scenario.seed is not None else c.seed
    if run_seed is not None:
        argv += ["--seed", str(run_seed)]
    if scenario.warmup_requests is not None:
        argv += ["--warmup-requests", str(scenario.warmup_requests)]
    argv += trace_argv(scenario, extra)
    argv += arrival_argv(scenario, extra)
    argv += args_to_argv(list(extra.items()))
    argv += ["--output-details"]  # per-request lengths and errors in the result line
    argv += ["--output-file", str(output_file)]
    return argv


TRACE_BACKENDS = {"agentic-trace": "sglang-oai-chat", "mooncake": "sglang"}
"""bench_serving replays agentic-trace rounds only through a chat backend (MULTI_TURN_BACKENDS) and
schedules mooncake sessions by their timestamps only with the native one (benchmark/serving.py);
a mooncake scenario with the chat backend is replayed as sessions instead (speed/sessions.py)."""


def _check_trace_backend(scenario: Scenario, extra: dict[str, Any], dataset_path: Any) -> None:
    need = TRACE_BACKENDS.get(scenario.dataset)
    if need is None:
        return
    if scenario.backend != need and not session_replay(scenario):
        raise BenchConfigError(
            f"scenario {scenario.id}: bench_serving replays {scenario.dataset} only with --backend {need}. "
            f"Fix: set backend: {need} in params/scenarios."
        )
    if not (dataset_path is not None or _has_flag(extra, "--dataset-path")):
        raise BenchConfigError(
            f"scenario {scenario.id}: {scenario.dataset} replays a trace file. Fix: give the scenario a "
            "'trace:' design (the speed stage generates the file) or pass dataset_path=<your trace file>."
        )


def trace_argv(scenario: Scenario, extra: dict[str, Any]) -> list[str]:
    """Per-turn output length, SGLang's cache report (cached tokens per request, from sglext or
    meta_info) and a flush after the warm-up, so the measured hit rate is the trace's own."""
    if scenario.dataset not in TRACE_BACKENDS:
        return []
    argv = []
    sessions = scenario.dataset == "agentic-trace" or session_replay(scenario)
    if sessions and scenario.trace is not None and "--sharegpt-output-len" not in extra:
        argv += ["--sharegpt-output-len", str(scenario.trace.output_len)]
    argv += [flag for flag in ("--cache-report", "--flush-cache") if flag not in extra]
    return argv


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        if value == float("inf"):
            return "inf"
        if value.is_integer():
            return str(int(value)) if abs(value) >= 1 else "0.0"
    return str(value)
