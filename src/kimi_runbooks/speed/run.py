"""Run scenarios through bench_serving, one result line at a time, resumable.

Each scenario ends as exactly one line appended to `run_dir/bench.jsonl` as soon as it
finishes: ok (with parsed metrics and verified token counts), not comparable (ran, but the
server counts tokens differently from the benchmark: kept, never compared with references),
failed (with the line of the log that says why, and the per-request errors), over-capacity (a
matrix cell the KV pool cannot hold, not run, as llm-inference-bench does) or skipped (cannot
run as configured, e.g. ShareGPT offline). Before each scenario the server goes through the
same readiness chain as deploy (target.health). A rerun reads that file and skips scenarios
already ok or over-capacity, so a crash an hour in costs only the scenario that was running.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..catalog import Scenario
from ..catalog.flags import flag_value
from ..plan import MemoryPlan
from ..progress import report_progress
from ..rundir import RunFolder, now_iso, read_jsonl
from ..target.health import check_server
from ..target.locate import RunHandle
from ..tools.envs import OFFLINE_ENV
from . import shared_worker
from .answer_latency import answer_latency, merge_turns, read_timings, timings_path
from .answer_probe import answer_results
from .argv import BENCH_MODULE, DEFAULT_TIMEOUT_S, BenchClient, BenchConfigError, BenchTarget, build_argv
from .bench_failure import classify, details_of, raw_result
from .bench_process import execute
from .benchenv import default_bench_python
from .capacity import capacity_plan, cell_fit, live_server_info
from .freshness import plan_prompts, used_seeds
from .goodput import goodput_argv
from .native import NATIVE_BACKENDS, missing_native_api
from .observe import ObserveConfig, ScenarioObserver, observe_for_run, sweep_key
from .operating_point import base_of, run_search
from .options import SpeedOptions
from .parse import BenchParseError, parse_block, parse_jsonl_text
from .repeats import pending, repeat_key, repeats_for, run_repeats
from .replicas import behind_router
from .results import FINISHED, load_results
from .saturation import should_stop
from .sessions import SessionError, applied, timed
from .tokens import TokenCheck, probe_scenarios, unchecked
from .traces import TraceError, prepare_trace, served_context_length, trace_results
from .worker import BenchWorker

log = logging.getLogger(__name__)

LOG_TAIL_CHARS = 2000
READY_TIMEOUT_S = 60.0
"""Per request of the readiness chain: some servers answer /v1/models only between generations."""


def server_problem(run: SpeedRun) -> str | None:
    """None when the readiness chain passes (reachable, key accepted, the model listed, healthy),
    else the cause and the fix (so a dead or misconfigured server fails a scenario fast)."""
    result = check_server(
        run.target.url,
        run.target.model or None,
        api_key_env=run.target.api_key_env,
        api_key=run.api_key,
        timeout=READY_TIMEOUT_S,
        model_source="the model the benchmark sends",
    )
    return None if result.ok else f"the server at {run.target.url} is not ready: {result.message()}"


def _timeout_for(scenario: Scenario, timeout_s: float | Mapping[str, float] | None) -> float:
    if isinstance(timeout_s, Mapping):
        return float(timeout_s.get(scenario.id, timeout_s.get("default", DEFAULT_TIMEOUT_S)))
    return float(timeout_s) if timeout_s else DEFAULT_TIMEOUT_S


def _tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _parse_outputs(output_file: Path, log_path: Path) -> tuple[dict[str, Any] | None, str]:
    """Metrics from the JSONL the client wrote, else from the printed block in its log."""
    if output_file.exists():
        rows = parse_jsonl_text(output_file.read_text(errors="replace"))
        if rows:
            return rows[-1], "output-file"
    try:
        return parse_block(log_path.read_text(errors="replace")), "printed block"
    except (BenchParseError, OSError):
        return None, "none"


@dataclass
class SpeedRun:
    """Everything one scenario needs, decided once per stage run."""

    folder: RunFolder
    target: BenchTarget
    api_key: str | None
    child_env: dict[str, str]
    python: str
    capacity: MemoryPlan | None
    common: dict[str, Any]
    options: SpeedOptions = field(default_factory=SpeedOptions)
    """The stage's options, as given (tokenizer, offline, dataset_path, timeouts, ...)."""
    token_checks: dict[str, TokenCheck] = field(default_factory=dict)
    worker: BenchWorker | None = None
    """One long-lived bench_serving process for the stage (worker.py); None: a process per scenario."""
    observe: ObserveConfig | None = None
    """/metrics and device telemetry sampled beside each scenario (observe.py); None: neither."""
    extra: dict[str, Any] = field(default_factory=dict)
    flush_offered: bool = False
    """The server answers SGLang's /server_info, so it has /flush_cache (freshness.py)."""

    def record(self, row: dict[str, Any]) -> dict[str, Any]:
        self.folder.append_jsonl(self.folder.bench, row)
        return row


def run_one(scenario: Scenario, run: SpeedRun, repeat: int = 1, repeats: int = 1) -> dict[str, Any]:
    """Run one scenario (repeat k of N, repeats.py); its row (ok / failed / over-capacity / skipped) is
    appended and returned."""
    folder = run.folder
    row: dict[str, Any] = {
        "scenario": scenario.id,
        **run.common,
        "started_at": now_iso(),
        "max_concurrency": scenario.max_concurrency,
        "repeat": repeat,
        "repeats": repeats,
    }
    fit = cell_fit(scenario, run.capacity)
    if fit is not None and run.capacity is not None:
        row["capacity"] = {
            "tokens_needed_per_rank": fit.tokens_needed_per_rank,
            "capacity_per_rank": fit.capacity_per_rank,
            "source": run.capacity.source,
        }
        if not fit.fits:
            row.update(
                status="over-capacity",
                metrics={},
                argv=[],
                log=None,
                error=(
                    f"{fit.tokens_needed_per_rank} prompt tokens per rank > KV pool "
                    f"{fit.capacity_per_rank} ({run.capacity.source}): not run"
                ),
            )
            return run.record(row)
    output_file = folder.bench_output(repeat_key(scenario.id, repeat, repeats))
    log_path = folder.bench_log(repeat_key(scenario.id, repeat, repeats))
    # freshness.py: a seed no earlier run of this folder used, and a flush where the server has one
    prompts = plan_prompts(scenario, run.options.seed, used_seeds(read_jsonl(folder.bench)), run.flush_offered)
    try:
        # agentic-trace / mooncake: the file replayed, grown toward the served context length
        scale = run.observe.time_scale if run.observe is not None else 1.0  # think time on the emulator's clock
        trace = prepare_trace(scenario, folder, run.options.dataset_path, run.extra.get("context_length"), scale)
        client = BenchClient(
            python=run.python,
            command_prefix=run.options.command_prefix,
            tokenizer=run.options.tokenizer,
            offline=run.options.offline,
            seed=run.options.seed,
            dataset_path=trace[0] if trace else run.options.dataset_path,
        )
        argv = build_argv(
            scenario.model_copy(update={"seed": prompts.seed}), run.target, output_file=output_file, client=client
        )
    except (BenchConfigError, TraceError, SessionError) as exc:
        row.update(status="skipped", metrics={}, argv=[], log=None, error=str(exc))
        return run.record(row)
    argv += goodput_argv(run.observe.scaled_slo(scenario.id) if run.observe else {})  # SGLang's own goodput
    argv += ["--flush-cache"] if prompts.flush_cache and "--flush-cache" not in argv else []
    row.update(argv=argv, log=str(log_path), output_file=str(output_file), prompts=prompts.as_dict())
    down = server_problem(run) if run.options.health_check else None
    if down:
        folder.save_text(log_path, down + "\n")
        row.update(
            status="failed",
            metrics={},
            error=down + " (after fixing it, rerun: finished scenarios are kept and skipped)",
        )
        return run.record(row)
    folder.mkdir(output_file.parent)
    output_file.unlink(missing_ok=True)  # bench_serving appends; one attempt per file
    t0 = time.monotonic()
    timeout = _timeout_for(scenario, run.options.timeout_s)
    sessions = isinstance(trace, tuple) and timed(trace[1])
    timings = timings_path(output_file)
    timings.unlink(missing_ok=True)
    if run.observe is None:
        code, timed_out = execute(run, argv, log_path, timeout, scenario.id, sessions, timings)
    else:
        with ScenarioObserver(run.observe, run.target.url, folder, scenario) as observer:
            code, timed_out = execute(run, argv, log_path, timeout, scenario.id, sessions, timings)
    folder.redact_file(output_file)  # bench_serving embeds /server_info, which can carry the api_key
    metrics, parsed_from = _parse_outputs(output_file, log_path)
    raw = raw_result(output_file)  # read once: per-request arrays for the details and goodput
    details = details_of(raw)
    if run.observe is not None:
        bench = {**raw, **(metrics or {})}
        row.update(observer.derive(bench, run.common.get("devices"), bool(run.common.get("emulated"))))
    row.update(
        duration_s=round(time.monotonic() - t0, 3),
        returncode=code,
        parsed_from=parsed_from,
        metrics=metrics or {},
        request_details=details,
        finished_at=now_iso(),
        **trace_results(scenario, trace, raw),
    )
    row.update(behind_router(row))  # the servers' own cache hit rate, not bench_serving's 0% through a router
    answers = answer_latency(flag_value(argv, "--backend"), raw, read_timings(timings), trace[1] if trace else None)
    row.update(answers)
    if isinstance(row.get("turns"), list):
        row["turns"] = merge_turns(row["turns"], answers)
    log_text = _tail(log_path, chars=200_000)
    if sessions:  # what session_replay.py says it applied (None: nothing)
        row["session_replay"] = applied(log_text)
    row.update(classify(scenario, code, timed_out, timeout, metrics, details, log_text))
    if row["status"] == "ok":
        check = run.token_checks.get(scenario.id)
        if check is not None:
            row["tokens"] = check.as_dict()
            if check.verified is False:
                row.update(status="not comparable", error=check.reason)
        # time to first answer token: per request under load when the worker timed them, else the probe
        probes = 0 if row.get("median_first_answer_ms") is not None else int(run.extra.get("answer_probe") or 0)
        row.update(answer_results(scenario, run.target.url, run.target.model, run.api_key, probes))
    return run.record(row)


def run_scenarios(
    scenarios: Sequence[Scenario],
    target: RunHandle | BenchTarget | str,
    folder: RunFolder,
    options: SpeedOptions | None = None,
    **settings: Any,
) -> pd.DataFrame:
    """Run each scenario in order (`run_one`); each result is appended to run_dir/bench.jsonl.

    `target` is a RunHandle (preferred: it carries emulated and the key's env-var name), a
    BenchTarget or a base URL; `options` (or the same names as keywords) are the stage's settings,
    each documented on SpeedOptions.
    """
    o = SpeedOptions.of(options, settings)
    tgt = BenchTarget.of(target)
    folder.add_secret_env(tgt.api_key_env)
    api_key = (
        target.api_key()
        if hasattr(target, "api_key")
        else (os.environ.get(tgt.api_key_env) if tgt.api_key_env else None)
    )
    api_key = None if api_key in (None, "", "EMPTY") else api_key
    child_env = {**os.environ, **(o.env or {}), "PYTHONUNBUFFERED": "1"}
    if api_key:
        child_env["OPENAI_API_KEY"] = api_key  # bench_serving reads it; never on the argv
    if o.offline:
        child_env.update(OFFLINE_ENV)  # no HF hub: transformers must not try to download
    live = live_server_info(tgt.url, api_key)
    emulated = tgt.emulated or bool(live and live.emulated)
    run = SpeedRun(
        folder=folder,
        target=tgt,
        api_key=api_key,
        child_env=child_env,
        python=o.python or default_bench_python(o.command_prefix),
        capacity=capacity_plan(o.memory_plan, live),
        common={
            "base_url": tgt.url,
            "model": tgt.model,
            "platform": o.platform,
            "devices": o.devices,
            "emulated": emulated,
            "rehearsal": tgt.rehearsal,
            "offline": o.offline,
        },
        options=o,
        extra={"answer_probe": o.answer_probe},
        flush_offered=live is not None,
    )
    if any(s.trace is not None and s.trace.context_length is None for s in scenarios):
        run.extra["context_length"] = served_context_length(tgt.url, api_key)
    run.observe = observe_for_run(
        run, target, scenarios, o.sample_metrics, o.launcher, o.smi, o.price_per_device_hour, o.price_source
    )
    wanted = run.extra["repeats_wanted"] = {s.id: repeats_for(s.repeats, o.repeats) for s in scenarios}
    run.extra["repeats"] = pending(wanted, read_jsonl(folder.bench) if o.resume else [], FINISHED)
    done = {sid for sid, left in run.extra["repeats"].items() if not left}
    todo = [s for s in scenarios if s.id not in done]
    if o.worker and not o.command_prefix:
        shared = shared_worker.find(folder, run.python, o.offline)  # the runbook's, already warm
        run.worker = BenchWorker(run.python, child_env, folder, shared, {"OPENAI_API_KEY": api_key})
    try:
        run.token_checks = token_checks(todo, run, o.verify_tokens, o.progress)
        _loop(scenarios, run, done, o.progress, o.stop_when_saturated)
    finally:
        if run.worker is not None:
            run.worker.close()
    df = load_results(folder.bench, devices=o.devices)
    ids = [s.id for s in scenarios]  # a search's rows are its probes (op@c13), kept with it
    return df[df["scenario"].map(base_of).isin(ids)].reset_index(drop=True) if "scenario" in df.columns else df


def _loop(
    scenarios: Sequence[Scenario], run: SpeedRun, done: set[str], progress: bool, stop_when_saturated: bool
) -> None:
    """Each scenario in order: resumed ones skipped, a saturated sweep's rest skipped, the rest run."""
    from tqdm.auto import tqdm

    folder = run.folder
    last_of_sweep: dict[tuple[Any, ...], dict[str, Any]] = {}
    stopped: dict[tuple[Any, ...], str] = {}
    no_native = missing_native_api(run.target.url, scenarios, run.api_key, emulated=run.target.emulated)
    if no_native:
        report_progress(folder, "speed", no_native, milestone=True)
    bar = tqdm(list(scenarios), desc="bench", unit="scenario", disable=not progress)
    for index, scenario in enumerate(bar, 1):
        bar.set_postfix_str(scenario.id)
        if scenario.id in done:
            log.info("%s: already finished in %s, skipped (resume)", scenario.id, folder.bench)
            report_progress(folder, "speed", f"{scenario.id}: already finished (resume)", milestone=True)
            continue
        key = sweep_key(scenario)
        why = f"not run: the sweep saturated at {stopped[key]} (stop_when_saturated)" if key in stopped else None
        why = why or (no_native if scenario.backend in NATIVE_BACKENDS else None)
        if why:
            row = {"scenario": scenario.id, **run.common, "max_concurrency": scenario.max_concurrency}
            row = run.record({**row, "status": "skipped", "metrics": {}, "argv": [], "log": None, "error": why})
            said = "no SGLang native API, see above" if why == no_native else why
            report_progress(folder, "speed", f"{scenario.id}: skipped ({said})", milestone=True)
            continue
        n, left = run.extra["repeats_wanted"][scenario.id], run.extra["repeats"][scenario.id]  # repeats.py
        times = f" (repeats {', '.join(map(str, left))} of {n})" if n > 1 and not scenario.search else ""
        report_progress(
            folder, "speed", f"scenario {index}/{len(scenarios)} {scenario.id}: started{times}", milestone=True
        )
        if scenario.search:  # operating_point.py: each probe is one run (a search does not repeat)
            row = run_search(scenario, run, run_one)
        else:
            row = run_repeats(left, functools.partial(run_one, scenario, run, repeats=n))
        if stop_when_saturated and row.get("status") == "ok" and not scenario.search:
            if should_stop(last_of_sweep.get(key), row):
                stopped[key] = scenario.id
            last_of_sweep[key] = row
        report_progress(
            folder,
            "speed",
            f"{scenario.id}: {row.get('status')}"
            + (f" in {row['duration_s']:.1f} s" if row.get("duration_s") else "")
            + (f": {row['error']}" if row.get("error") else ""),
            milestone=True,
        )
    bar.close()


def token_checks(todo: Sequence[Scenario], run: SpeedRun, verify: bool, progress: bool) -> dict[str, TokenCheck]:
    """One probe request per scenario about to run (tokens.py); not checked when verify is False."""
    if not verify:
        return {s.id: unchecked("not checked (verify_tokens=False)") for s in todo}
    items = []
    for scenario in todo:
        fit = cell_fit(scenario, run.capacity)
        if fit is not None and not fit.fits:
            continue
        try:
            client = BenchClient(
                python="python",
                tokenizer=run.options.tokenizer,
                offline=run.options.offline,
                seed=run.options.seed,
                dataset_path=run.options.dataset_path,
            )
            argv = build_argv(scenario, run.target, output_file=run.folder.bench_output(scenario.id), client=client)
        except BenchConfigError:
            continue
        items.append((scenario.id, argv[argv.index(BENCH_MODULE) + 1 :]))
    if progress and items:
        print(f"[{now_iso()}] checking token accounting: one request per scenario ({len(items)})", flush=True)
    return probe_scenarios(
        items,
        run.target.url,
        python=default_bench_python(),
        env=run.child_env,
        worker=run.worker,
        log_path=run.folder.logs / RunFolder.TOKEN_PROBE_LOG,
        folder=run.folder,  # its start and end are start-up phases (start_phases.py)
    )
