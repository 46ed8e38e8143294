"""Speed stage: scenario -> bench_serving argv; run; parse; compare; plot.

* stage      `stage.run(folder, SpeedStageOptions(...))`: the stage's one entry (what the notebook calls)
* scenarios  `select_scenarios`, `platform_capacity`: what to run and what the server can hold
* argv       `build_argv(scenario, target, output_file=..., client=BenchClient(...))`, BenchTarget, BenchConfigError
* run        `run_scenarios(...)`: a loop over `run_one`, appended to run_dir/bench.jsonl, resumable
* operating_point  a scenario's `search:` bisected (highest concurrency or rate meeting its SLO), probes as rows
* arrivals   `arrival: poisson|constant`: bench_serving's --request-rate, or an evenly spaced mooncake trace
* capacity   over-capacity matrix cells (planner estimate or live /server_info)
* tokens     which tokenizer; one request per scenario checks the server's token counts
* bench_failure  the error line of a failed run, per-request errors (--output-details)
* parse      `parse_result_text(text)`: JSONL line or printed block -> JSONL-keyed dict
* results    `load_results(path)` -> DataFrame with InferenceX-style derived metrics
* repeats    `repeats=N`: which repeats remain, mean and 95% Student t interval (`repeat_summary`)
* references `reference_frame(...)`, `compare(run, refs, tolerance=...)`: published results beside this run's
* figures    throughput/latency vs concurrency, Pareto, context x concurrency heatmap
* observe    /metrics and device telemetry beside each scenario: saturation, goodput, J/token, $/M
* predicted  `predicted_vs_measured`: this run beside kimi_runbooks.perfmodel's prediction, flagged out of band
* inside     the table and time-series figures of what the server did during each scenario

Plain imports: pandas and plotly come with the package (~0.8 s). The speed kernel starts the bench
worker before ipykernel (execution.prewarm), so the first cell no longer races the import.
"""

from __future__ import annotations

from ..target.locate import resolve_target
from .argv import (
    DEFAULT_TIMEOUT_S,
    BenchClient,
    BenchConfigError,
    BenchTarget,
    OfflineDatasetWarning,
    build_argv,
    dataset_name,
)
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
from .stage import SpeedStageResult
from .stage_options import SpeedStageOptions
from .tokens import TOLERANCE, TokenCheck, TokenizerMissing, choose_tokenizer, judge, stage_tokenizer

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "FINISHED",
    "RESULTS_FILE",
    "STATUSES",
    "TOLERANCE",
    "BenchClient",
    "BenchConfigError",
    "BenchParseError",
    "BenchTarget",
    "OfflineDatasetWarning",
    "ScenariosFailed",
    "SpeedRun",
    "SpeedStageOptions",
    "SpeedStageResult",
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
