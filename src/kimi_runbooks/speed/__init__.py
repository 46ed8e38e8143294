"""Speed stage: scenario -> bench_serving argv; run; parse; compare; plot.

* scenarios  `select_scenarios`, `platform_capacity`: what to run and what the server can hold
* argv       `build_argv(scenario, target, ...)`, BenchTarget, BenchConfigError
* run        `run_scenarios(...)`: a loop over `run_one`, appended to run_dir/bench.jsonl, resumable
* operating_point  a scenario's `search:` bisected (highest concurrency or rate meeting its SLO), probes as rows
* arrivals   `arrival: poisson|constant`: bench_serving's --request-rate, or an evenly spaced mooncake trace
* capacity   over-capacity matrix cells (planner estimate or live /server_info)
* tokens     which tokenizer; one request per scenario checks the server's token counts
* outcome    the error line of a failed run, per-request errors (--output-details)
* parse      `parse_result_text(text)`: JSONL line or printed block -> JSONL-keyed dict
* results    `load_results(path)` -> DataFrame with InferenceX-style derived metrics
* repeats    `repeats=N`: which repeats remain, mean and 95% Student t interval (`repeat_summary`)
* compare    `reference_frame(...)`, `compare(run, refs, tolerance=...)`
* figures    throughput/latency vs concurrency, Pareto, context x concurrency heatmap
* observe    /metrics and device telemetry beside each scenario: saturation, goodput, J/token, $/M
* predicted  `predicted_vs_measured`: this run beside kimi_runbooks.perfmodel's prediction, flagged out of band
* inside     the table and time-series figures of what the server did during each scenario

The names below are imported on first use (PEP 562): `from kimi_runbooks.speed import shared_worker` in a
notebook's first cell must not pay for pandas and the figures before the bench worker can start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..target.locate import resolve_target
    from .argv import DEFAULT_TIMEOUT_S, BenchConfigError, BenchTarget, OfflineDatasetWarning, build_argv, dataset_name
    from .bench_failure import error_line, request_details
    from .benchenv import offline_tokenizer
    from .capacity import capacity_plan, cell_fit, live_server_info
    from .figures import heatmap, latency_vs_concurrency, pareto, pareto_front, throughput_vs_concurrency
    from .inside import inside_notes, inside_table, series_frame, server_timeseries, sweep_goodput
    from .options import SpeedOptions
    from .parse import BenchParseError, parse_block, parse_jsonl_text, parse_result_text
    from .predicted import predicted_vs_measured
    from .references import compare, compare_wide, family, reference_frame
    from .repeats import repeat_summary
    from .results import (
        FINISHED,
        RESULTS_FILE,
        STATUSES,
        ScenariosFailed,
        add_derived,
        latency_table,
        load_results,
        raise_if_failed,
    )
    from .run import SpeedRun, run_one, run_scenarios, server_problem
    from .scenarios import platform_capacity, select_scenarios
    from .tokens import TOLERANCE, TokenCheck, TokenizerMissing, choose_tokenizer, judge, stage_tokenizer

_EXPORTS: dict[str, str] = {
    "resolve_target": "..target.locate",
    "DEFAULT_TIMEOUT_S": ".argv",
    "BenchConfigError": ".argv",
    "BenchTarget": ".argv",
    "OfflineDatasetWarning": ".argv",
    "build_argv": ".argv",
    "dataset_name": ".argv",
    "error_line": ".bench_failure",
    "request_details": ".bench_failure",
    "offline_tokenizer": ".benchenv",
    "capacity_plan": ".capacity",
    "cell_fit": ".capacity",
    "live_server_info": ".capacity",
    "heatmap": ".figures",
    "latency_vs_concurrency": ".figures",
    "pareto": ".figures",
    "pareto_front": ".figures",
    "throughput_vs_concurrency": ".figures",
    "inside_notes": ".inside",
    "inside_table": ".inside",
    "series_frame": ".inside",
    "server_timeseries": ".inside",
    "sweep_goodput": ".inside",
    "SpeedOptions": ".options",
    "BenchParseError": ".parse",
    "parse_block": ".parse",
    "parse_jsonl_text": ".parse",
    "parse_result_text": ".parse",
    "predicted_vs_measured": ".predicted",
    "compare": ".references",
    "compare_wide": ".references",
    "family": ".references",
    "reference_frame": ".references",
    "repeat_summary": ".repeats",
    "FINISHED": ".results",
    "RESULTS_FILE": ".results",
    "STATUSES": ".results",
    "ScenariosFailed": ".results",
    "add_derived": ".results",
    "latency_table": ".results",
    "load_results": ".results",
    "raise_if_failed": ".results",
    "SpeedRun": ".run",
    "run_one": ".run",
    "run_scenarios": ".run",
    "server_problem": ".run",
    "platform_capacity": ".scenarios",
    "select_scenarios": ".scenarios",
    "TOLERANCE": ".tokens",
    "TokenCheck": ".tokens",
    "TokenizerMissing": ".tokens",
    "choose_tokenizer": ".tokens",
    "judge": ".tokens",
    "stage_tokenizer": ".tokens",
}
"""Each exported name -> the module that defines it (relative to this package)."""

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "FINISHED",
    "RESULTS_FILE",
    "STATUSES",
    "TOLERANCE",
    "BenchConfigError",
    "BenchParseError",
    "BenchTarget",
    "OfflineDatasetWarning",
    "ScenariosFailed",
    "SpeedRun",
    "TokenCheck",
    "TokenizerMissing",
    "choose_tokenizer",
    "error_line",
    "judge",
    "raise_if_failed",
    "request_details",
    "server_problem",
    "stage_tokenizer",
    "add_derived",
    "build_argv",
    "capacity_plan",
    "cell_fit",
    "compare",
    "compare_wide",
    "dataset_name",
    "family",
    "heatmap",
    "inside_notes",
    "inside_table",
    "series_frame",
    "server_timeseries",
    "sweep_goodput",
    "latency_table",
    "latency_vs_concurrency",
    "live_server_info",
    "load_results",
    "offline_tokenizer",
    "pareto",
    "pareto_front",
    "parse_block",
    "parse_jsonl_text",
    "parse_result_text",
    "platform_capacity",
    "predicted_vs_measured",
    "reference_frame",
    "repeat_summary",
    "resolve_target",
    "run_one",
    "SpeedOptions",
    "run_scenarios",
    "select_scenarios",
    "throughput_vs_concurrency",
]


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module the first time it is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
