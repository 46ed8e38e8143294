"""Run scenarios through bench_serving, one result line at a time, resumable.

Each scenario ends as exactly one line appended to `run_dir/bench.jsonl` as soon as it
finishes: ok (with parsed metrics), failed (with the error and the log), over-capacity (a
matrix cell the KV pool cannot hold, not run, as seed 003 does) or skipped (cannot run as
configured, e.g. ShareGPT offline). A rerun reads that file and skips scenarios already ok or
over-capacity, so a crash an hour in costs only the scenario that was running.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import httpx
import pandas as pd

from .bench_argv import DEFAULT_TIMEOUT_S, BenchConfigError, BenchTarget, build_argv
from .bench_parse import BenchParseError, parse_block, parse_jsonl_text
from .bench_results import FINISHED, RESULTS_FILE, load_results
from .catalog import Scenario
from .planner import CellFit, MemoryPlan
from .procs import stop_group
from .runinfo import append_jsonl, fetch_server_info, read_jsonl
from .secrets import redact
from .toolenv import OFFLINE_ENV, ToolEnvError, tool_env

log = logging.getLogger(__name__)

LOG_TAIL_CHARS = 2000


@dataclass(frozen=True)
class LiveInfo:
    """What /server_info says about the server right now (None when it is not reachable)."""

    max_total_num_tokens: int | None
    dp_ranks: int
    emulated: bool


def live_server_info(url: str, api_key: str | None = None, timeout: float = 5.0) -> LiveInfo | None:
    """What the capacity check needs from /server_info; None if the server does not answer."""
    info = fetch_server_info(url, api_key, timeout)
    if info is None:
        return None
    tokens = info.get("max_total_num_tokens")
    dp = int(info.get("dp_size") or 1) if info.get("enable_dp_attention") else 1
    return LiveInfo(int(tokens) if tokens else None, max(dp, 1), bool(info.get("emulated")))


def server_is_up(url: str, api_key: str | None = None, timeout: float = 5.0) -> str | None:
    """None when GET /health answers 200, else why not (so a dead server fails fast)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        resp = httpx.get(url.rstrip("/") + "/health", headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        return f"server at {url} is not reachable (GET /health: {type(exc).__name__}: {exc})"
    if resp.status_code != 200:
        return f"server at {url} is not healthy (GET /health answered {resp.status_code})"
    return None


def capacity_plan(memory_plan: MemoryPlan | None, live: LiveInfo | None) -> MemoryPlan | None:
    """The plan to check cells against: the live pool size when known, else the estimate."""
    if live is not None and live.max_total_num_tokens:
        if memory_plan is not None:
            return memory_plan.with_live_capacity(live.max_total_num_tokens, live.dp_ranks)
        return MemoryPlan(
            memory_gib=0.0, mem_fraction_static=0.0, usable_gib_per_device=0.0,
            weights_gib_per_device=0.0, draft_gib_per_device=0.0, runtime_reserve_gib=0.0,
            kv_budget_gib=0.0, kv_cache_dtype="unknown", kv_bytes_per_token=0,
            kv_pool_tokens=live.max_total_num_tokens, dp_attention_ranks=live.dp_ranks,
            kv_pool_tokens_total=live.max_total_num_tokens * live.dp_ranks,
            source="live /server_info max_total_num_tokens",
        )
    return memory_plan


def cell_fit(scenario: Scenario, plan: MemoryPlan | None) -> CellFit | None:
    """Capacity check of a matrix cell: concurrency requests of context + output tokens at once.

    The same criterion the planner is tested with on seed 003 (every cell that ran fits, every
    over-capacity cell does not). Only matrix cells are checked; other scenarios queue on a real
    server rather than fail, which is what their published numbers measured.
    """
    if plan is None or scenario.matrix is None:
        return None
    context = scenario.matrix.get("context_tokens", scenario.input_len or 0)
    concurrency = scenario.matrix.get("concurrency", scenario.max_concurrency or 1)
    return plan.fit(int(context), int(concurrency), int(scenario.output_len or 0))


def _timeout_for(scenario: Scenario, timeout_s: float | Mapping[str, float] | None) -> float:
    if isinstance(timeout_s, Mapping):
        return float(timeout_s.get(scenario.id, timeout_s.get("default", DEFAULT_TIMEOUT_S)))
    return float(timeout_s) if timeout_s else DEFAULT_TIMEOUT_S


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _tail(path: Path, chars: int = LOG_TAIL_CHARS) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def _run_child(argv: list[str], log_path: Path, env: dict[str, str], timeout: float) -> tuple[int | None, bool]:
    """Run argv in its own process group, output to log_path; (returncode, timed_out)."""
    with log_path.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            stop_group(proc)
            return proc.returncode, True
        except BaseException:
            stop_group(proc, grace_s=0)
            raise


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


def _short(metrics: dict[str, Any], scenario: Scenario) -> bool:
    """Fewer completed requests than sent (failed requests, server died mid-run)."""
    done = metrics.get("completed")
    return isinstance(done, (int, float)) and done < scenario.num_prompts


def _redact_file(path: Path, names: Sequence[str | None]) -> None:
    if path.exists():
        text = path.read_text(errors="replace")
        clean = redact(text, names)
        if clean != text:
            path.write_text(clean)


def run_scenarios(
    scenarios: Sequence[Scenario],
    target: Any,
    run_dir: str | Path,
    *,
    tokenizer: str | Path | None = None,
    offline: bool = False,
    command_prefix: Sequence[str] | None = None,
    python: str | None = None,
    seed: int | None = None,
    dataset_path: str | Path | None = None,
    timeout_s: float | Mapping[str, float] | None = DEFAULT_TIMEOUT_S,
    resume: bool = True,
    memory_plan: MemoryPlan | None = None,
    devices: int | None = None,
    platform: str | None = None,
    env: Mapping[str, str] | None = None,
    health_check: bool = True,
    progress: bool = True,
) -> pd.DataFrame:
    """Run each scenario in order; append its result to run_dir/bench.jsonl; return the table.

    `target` is a RunHandle (preferred: it carries emulated and the key's env-var name), a
    BenchTarget or a base URL. `python` is the interpreter with sglang (default: the `bench`
    tool env when it exists, else python3). With a command_prefix (docker exec ...) the
    output file path must be visible inside the container; the printed block is the fallback.
    """
    from tqdm.auto import tqdm

    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    raw_dir, log_dir = folder / "bench_raw", folder / "logs"
    raw_dir.mkdir(exist_ok=True)
    log_dir.mkdir(exist_ok=True)
    results = folder / RESULTS_FILE
    tgt = BenchTarget.of(target)
    api_key = target.api_key() if hasattr(target, "api_key") else (
        os.environ.get(tgt.api_key_env) if tgt.api_key_env else None)
    api_key = None if api_key in (None, "", "EMPTY") else api_key
    secret_names = [tgt.api_key_env]
    child_env = {**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"}
    if api_key:
        child_env["OPENAI_API_KEY"] = api_key  # bench_serving reads it; never on the argv
    if offline:
        child_env.update(OFFLINE_ENV)  # no HF hub: transformers must not try to download
    python = python or default_bench_python(command_prefix)

    live = live_server_info(tgt.url, api_key)
    emulated = tgt.emulated or bool(live and live.emulated)
    plan = capacity_plan(memory_plan, live)
    done = {r["scenario"] for r in read_jsonl(results) if r.get("status") in FINISHED} if resume else set()
    common = {"base_url": tgt.url, "model": tgt.model, "platform": platform, "devices": devices,
              "emulated": emulated, "offline": offline}

    bar = tqdm(list(scenarios), desc="bench", unit="scenario", disable=not progress)
    for scenario in bar:
        bar.set_postfix_str(scenario.id)
        if scenario.id in done:
            log.info("%s: already finished in %s, skipped (resume)", scenario.id, results)
            continue
        row: dict[str, Any] = {"scenario": scenario.id, **common, "started_at": _now(),
                               "max_concurrency": scenario.max_concurrency}
        fit = cell_fit(scenario, plan)
        if fit is not None:
            row["capacity"] = {"tokens_needed_per_rank": fit.tokens_needed_per_rank,
                               "capacity_per_rank": fit.capacity_per_rank, "source": plan.source}
            if not fit.fits:
                row.update(status="over-capacity", metrics={}, argv=[], log=None,
                           error=(f"{fit.tokens_needed_per_rank} prompt tokens per rank > KV pool "
                                  f"{fit.capacity_per_rank} ({plan.source}): not run"))
                append_jsonl(results, redact(row, secret_names))
                continue
        output_file = raw_dir / f"{scenario.id}.jsonl"
        log_path = log_dir / f"bench-{scenario.id}.log"
        try:
            argv = build_argv(scenario, tgt, output_file=output_file, tokenizer=tokenizer,
                              offline=offline, command_prefix=command_prefix, seed=seed,
                              python=python, dataset_path=dataset_path)
        except BenchConfigError as exc:
            row.update(status="skipped", metrics={}, argv=[], log=None, error=str(exc))
            append_jsonl(results, redact(row, secret_names))
            continue
        row.update(argv=argv, log=str(log_path), output_file=str(output_file))
        down = server_is_up(tgt.url, api_key) if health_check else None
        if down:
            log_path.write_text(down + "\n")
            row.update(status="failed", metrics={}, error=down + ". Fix: restart the server "
                       "(deploy stage), then rerun: finished scenarios are kept and skipped.")
            append_jsonl(results, redact(row, secret_names))
            continue
        output_file.unlink(missing_ok=True)  # bench_serving appends; one attempt per file
        t0 = time.monotonic()
        code, timed_out = _run_child(argv, log_path, child_env, _timeout_for(scenario, timeout_s))
        _redact_file(log_path, secret_names)
        if output_file.exists():  # bench_serving embeds /server_info, which can carry the api_key
            _redact_file(output_file, secret_names)
        metrics, parsed_from = _parse_outputs(output_file, log_path)
        row.update(duration_s=round(time.monotonic() - t0, 3), returncode=code,
                   parsed_from=parsed_from, metrics=metrics or {}, finished_at=_now())
        if timed_out:
            row.update(status="failed", error=f"timed out after {_timeout_for(scenario, timeout_s):g} s "
                       "(fix: raise timeout_s for this scenario)\n" + _tail(log_path))
        elif code != 0 or not metrics:
            row.update(status="failed", error=f"bench_serving exited with {code}"
                       + ("" if metrics else " and wrote no result") + ":\n" + _tail(log_path))
        elif not metrics.get("completed"):
            row.update(status="failed", error="no request completed:\n" + _tail(log_path))
        elif _short(metrics, scenario):
            row.update(status="failed", error=(
                f"only {int(metrics['completed'])} of {scenario.num_prompts} requests completed; "
                "numbers from a partial run are not comparable (the metrics are kept):\n" + _tail(log_path)))
        else:
            row.update(status="ok", error=None)
        append_jsonl(results, redact(row, secret_names))
    bar.close()
    df = load_results(results, devices=devices)
    ids = [s.id for s in scenarios]
    return df[df["scenario"].isin(ids)].reset_index(drop=True) if "scenario" in df.columns else df


def default_bench_python(command_prefix: Sequence[str] | None = None) -> str:
    """The `bench` tool env's python (no prefix redirects elsewhere), else python3 with a warning."""
    if command_prefix:
        return "python3"
    try:
        return str(tool_env("bench").python)
    except ToolEnvError as exc:
        log.warning("bench tool env unavailable (%s); using python3", exc)
        return "python3"
