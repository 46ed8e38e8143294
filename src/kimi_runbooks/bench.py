"""Speed stage: scenario -> bench_serving argv; run; parse; compare; plot.

The pieces live in small modules; this one is the stage's public face:

* bench_argv    `build_argv(scenario, target, ...)`, BenchTarget, BenchConfigError
* bench_run     `run_scenarios(...)`: ordered, appended to run_dir/bench.jsonl, resumable
* bench_parse   `parse_result_text(text)`: JSONL line or printed block -> JSONL-keyed dict
* bench_results `load_results(path)` -> DataFrame with InferenceX-style derived metrics
* bench_compare `reference_frame(...)`, `compare(run, refs, tolerance=...)`
* bench_figures throughput/latency vs concurrency, Pareto, context x concurrency heatmap
"""

from __future__ import annotations

from typing import Sequence

from .bench_argv import (
    DEFAULT_TIMEOUT_S,
    BenchConfigError,
    BenchTarget,
    OfflineDatasetWarning,
    build_argv,
    dataset_name,
)
from .bench_compare import compare, compare_wide, family, reference_frame
from .bench_figures import heatmap, latency_vs_concurrency, pareto, pareto_front, throughput_vs_concurrency
from .bench_parse import BenchParseError, parse_block, parse_jsonl_text, parse_result_text
from .bench_results import FINISHED, RESULTS_FILE, STATUSES, add_derived, latency_table, load_results
from .bench_run import capacity_plan, cell_fit, live_server_info, run_scenarios
from .catalog import Catalog, Scenario, load_catalog

run = run_scenarios

__all__ = [
    "DEFAULT_TIMEOUT_S", "FINISHED", "RESULTS_FILE", "STATUSES", "BenchConfigError", "BenchParseError",
    "BenchTarget", "OfflineDatasetWarning", "add_derived", "build_argv", "capacity_plan", "cell_fit",
    "compare", "compare_wide", "dataset_name", "family", "heatmap", "latency_table",
    "latency_vs_concurrency", "live_server_info", "load_results", "pareto", "pareto_front",
    "parse_block", "parse_jsonl_text", "parse_result_text", "reference_frame", "run", "run_scenarios",
    "offline_tokenizer", "platform_capacity", "resolve_target", "select_scenarios",
    "throughput_vs_concurrency",
]


def select_scenarios(scenario_set: str | None = None, scenarios: Sequence[str] | None = None,
                     catalog: Catalog | None = None) -> list[Scenario]:
    """Scenarios by id (in the order given), else every scenario of a set; unknown ids fail clearly."""
    catalog = catalog or load_catalog()
    if scenarios:
        return [catalog.scenario(s) for s in scenarios]
    if not scenario_set:
        raise ValueError("no scenarios chosen. Fix: pass scenario_set (e.g. 'smoke') or a list of scenario ids.")
    if scenario_set not in catalog.scenario_sets:
        valid = ", ".join(sorted(catalog.scenario_sets))
        raise ValueError(f"unknown scenario set '{scenario_set}'. Valid sets: {valid}. "
                         "Fix: pick one, or add params/scenarios/<set>.yaml.")
    return list(catalog.scenario_sets[scenario_set].scenarios)


def resolve_target(run_dir, base_url: str | None = None, model: str | None = None,
                   api_key_env: str | None = None, platform: str | None = None):
    """The server to benchmark: the run folder's handle.json, or an external base_url (its served
    model asked from /v1/models when not given). See runinfo.resolve_target."""
    from .runinfo import resolve_target as _resolve

    return _resolve(run_dir, base_url=base_url, model=model, api_key_env=api_key_env, platform=platform)


def platform_capacity(platform: str | None, catalog: Catalog | None = None, run_dir=None):
    """(memory plan, devices serving it) of the plan the deploy stage launched (its manifest in
    run_dir), else of the platform's default recipe; (None, None) without either."""
    import json
    from pathlib import Path

    from .recipes import PlanConfig, plan

    catalog = catalog or load_catalog()
    manifest = Path(run_dir) / "manifest.json" if run_dir else None
    if manifest is not None and manifest.exists():
        config = (json.loads(manifest.read_text()).get("plan") or {}).get("config")
        if config:
            launch = plan(PlanConfig(**config), catalog)
            return launch.memory, launch.devices_used
    if not platform:
        return None, None
    launch = plan(PlanConfig(platform=platform), catalog)
    return launch.memory, launch.devices_used


def offline_tokenizer(run_dir, tokenizer=None, offline: bool = True):
    """The --tokenizer to use: the given one, or (offline) a small local one built in run_dir."""
    from pathlib import Path

    if tokenizer is not None or not offline:
        return tokenizer
    from .toolenv import make_offline_tokenizer

    dest = Path(run_dir) / "tokenizer"
    if not (dest / "tokenizer.json").exists():
        make_offline_tokenizer(dest)
    return dest
