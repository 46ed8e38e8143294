"""Results as a table, with the metrics InferenceX reports.

`load_results` reads the runner's `bench.jsonl` (one row per scenario attempt, or per repeat of a
scenario run `repeats` times; the latest attempt of each wins), a raw bench_serving `--output-file`,
or a printed block, and returns one pandas row per result (per scenario: its repeats collapsed into
their mean and 95% interval by speed.repeats; `per_repeat=True` keeps one row per repeat) with
bench_serving's own column names plus:

* `output_tok_s_per_gpu`, `total_tok_s_per_gpu` = throughput / devices (when devices known);
* `tok_s_per_user` = 1000 / median TPOT (what one user sees while the batch decodes);
* `label`: measured, emulated or reference, so no number travels without its origin.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..origin import source_label
from ..rundir import RunFolder, read_jsonl
from ..rundir.attempts import latest_by_repeat
from .parse import parse_jsonl_text, parse_result_text
from .repeats import collapse

RESULTS_FILE = RunFolder.BENCH
STATUSES = ("ok", "not comparable", "failed", "over-capacity", "skipped")
FINISHED = ("ok", "over-capacity")
"""Statuses a resumed run does not repeat (failed, skipped and not comparable scenarios are retried)."""


class ScenariosFailed(RuntimeError):
    """Scenarios failed: the speed stage is not ok. The message names each with its error line."""


def raise_if_failed(results: pd.DataFrame) -> None:
    """Raise ScenariosFailed when any scenario failed (so the stage, and the runbook, say so)."""
    if results.empty or "status" not in results.columns:
        return
    failed = results[results["status"] == "failed"]
    if len(failed):
        lines = "\n".join(f"  - {row['scenario']}: {row.get('error')}" for _, row in failed.iterrows())
        raise ScenariosFailed(f"{len(failed)} of {len(results)} speed scenario(s) failed:\n{lines}")


LATENCY_KINDS = ("ttft", "tpot", "itl", "e2e_latency")


def run_label(emulated: bool, rehearsal: bool = False) -> str:
    return source_label(emulated, rehearsal=rehearsal)


def _per_gpu(value: Any, devices: Any) -> float:
    try:
        v, d = float(value), float(devices)
    except (TypeError, ValueError):
        return math.nan
    return v / d if d > 0 and math.isfinite(v) else math.nan


def tok_s_per_user(median_tpot_ms: Any) -> float:
    """1000 / median TPOT (ms): decode speed one user sees."""
    try:
        tpot = float(median_tpot_ms)
    except (TypeError, ValueError):
        return math.nan
    return 1000.0 / tpot if tpot > 0 and math.isfinite(tpot) else math.nan


def add_derived(df: pd.DataFrame, devices: int | None = None) -> pd.DataFrame:
    """Add per-GPU throughputs and tok/s per user; `devices` fills rows that lack a count."""
    df = df.copy()
    if "devices" not in df.columns:
        df["devices"] = devices
    elif devices is not None:
        df["devices"] = df["devices"].fillna(devices)
    for col in ("output_throughput", "total_throughput", "median_tpot_ms"):
        if col not in df.columns:
            df[col] = math.nan
    df["output_tok_s_per_gpu"] = [_per_gpu(v, d) for v, d in zip(df["output_throughput"], df["devices"])]
    df["total_tok_s_per_gpu"] = [_per_gpu(v, d) for v, d in zip(df["total_throughput"], df["devices"])]
    if "tok_s_per_user" in df.columns:  # references may carry it directly (matrix per-request tok/s)
        derived = [tok_s_per_user(t) for t in df["median_tpot_ms"]]
        df["tok_s_per_user"] = [d if math.isfinite(d) else v for d, v in zip(derived, df["tok_s_per_user"])]
    else:
        df["tok_s_per_user"] = [tok_s_per_user(t) for t in df["median_tpot_ms"]]
    return df


def latency_table(df: pd.DataFrame, kinds: Iterable[str] = LATENCY_KINDS, index: str = "scenario") -> pd.DataFrame:
    """Median and p99 side by side per latency kind (InferenceX style), indexed by scenario."""
    cols: dict[tuple[str, str], Any] = {}
    for kind in kinds:
        for stat in ("median", "p99"):
            name = f"{stat}_{kind}_ms"
            if name in df.columns:
                cols[(f"{kind} (ms)", stat)] = df[name].values
    table = pd.DataFrame(cols, index=df[index] if index in df.columns else df.index)
    if len(table.columns):
        table.columns = pd.MultiIndex.from_tuples(list(cols))
    return table


RUNNER_NESTED = (
    "metrics",
    "argv",
    "capacity",
    "tokens",
    "request_details",
    "server",
    "telemetry",
    "saturation",
    "goodput",
    "efficiency",
    "prompts",
    "emulator_lag",
    "replicas",
)


def observed_columns(row: dict[str, Any]) -> dict[str, Any]:
    """What the samplers beside a scenario add (speed/observe.py), as flat columns."""
    server, tele = row.get("server") or {}, row.get("telemetry") or {}
    sat, good, eff = row.get("saturation") or {}, row.get("goodput") or {}, row.get("efficiency") or {}
    reasons = sat.get("reasons") or []
    lag = row.get("emulator_lag") or {}
    return {
        "metrics_samples": server.get("samples"),
        "metrics_note": server.get("note"),
        "server_peak_running": server.get("peak_running"),
        "server_peak_queued": server.get("peak_queued"),
        "server_peak_token_usage": server.get("peak_token_usage"),
        "server_cache_hit_rate": server.get("cache_hit_rate"),
        "effective_concurrency": sat.get("effective_concurrency"),
        "saturated": sat.get("saturated") if sat else None,
        "saturation_reasons": "; ".join(reasons) if reasons else None,
        "emulator_late_share": lag.get("late_share"),
        "emulator_behind": lag.get("behind") if lag else None,
        "not_representative": lag.get("reason"),
        "slo": ", ".join(f"{k} {v:g}" for k, v in (good.get("slo") or {}).items()) or None,
        "slo_attainment": good.get("slo_attainment"),
        "goodput_req_s": good.get("goodput_req_s"),
        "goodput_tok_s": good.get("goodput_tok_s"),
        "telemetry_samples": tele.get("samples"),
        "telemetry_where": tele.get("where"),
        "mean_power_w": tele.get("mean_power_w"),
        "joules_per_output_token": eff.get("joules_per_output_token"),
        "output_tok_s_per_kw": eff.get("output_tok_s_per_kw"),
        "usd_per_million_output_tokens": eff.get("usd_per_million_output_tokens"),
        "price_source": eff.get("price_source"),
    }


def _flatten_runner_rows(rows: list[dict[str, Any]], per_repeat: bool = False) -> pd.DataFrame:
    records = []
    for row in latest_by_repeat(rows).values():  # in the order of the latest attempts
        rec = {k: v for k, v in row.items() if k not in RUNNER_NESTED}
        rec["argv"] = " ".join(row.get("argv") or [])
        tokens, details = row.get("tokens") or {}, row.get("request_details") or {}
        rec["token_check"] = tokens.get("reason")
        rec["server_input_tokens"] = tokens.get("server_input")  # the first request, as the server counted it
        rec["server_output_tokens"] = tokens.get("server_output")
        rec["requests_failed"] = details.get("failed")
        rec["label"] = run_label(bool(row.get("emulated")), bool(row.get("rehearsal")))
        prompts = row.get("prompts") or {}  # freshness.py: fresh or shared-prefix, and why
        rec["prompts"], rec["prompts_note"] = prompts.get("kind"), prompts.get("note")
        for key, value in (row.get("capacity") or {}).items():
            rec[f"capacity_{key}"] = value
        rec.update(observed_columns(row))
        for key, value in (row.get("metrics") or {}).items():
            rec.setdefault(key, value)
        records.append(rec)
    return pd.DataFrame.from_records(records if per_repeat else collapse(records))


def load_results(path: str | Path, devices: int | None = None, per_repeat: bool = False) -> pd.DataFrame:
    """A run folder, its bench.jsonl, a bench_serving --output-file or a printed block -> rows.

    Runner rows keep scenario, status, label (measured/emulated), error and log; every metric
    is a column named as in bench_serving's JSONL; derived metrics are added (see module doc).
    A scenario run several times is one row (mean, interval, n_runs) unless `per_repeat`.
    """
    p = Path(path)
    if p.is_dir():
        p = p / RESULTS_FILE
    if not p.exists():
        raise FileNotFoundError(
            f"{p} does not exist. Fix: run the speed stage (speed.run_scenarios) for this run "
            "folder first, or pass the path of a bench_serving --output-file."
        )
    text = p.read_text(encoding="utf-8", errors="replace")
    rows = read_jsonl(p) if text.lstrip().startswith("{") else []
    if rows and all("scenario" in r and "status" in r for r in rows):
        df = _flatten_runner_rows(rows, per_repeat)
    elif rows:
        df = pd.DataFrame.from_records(parse_jsonl_text(text))
        emulated = df["emulated"].fillna(False) if "emulated" in df.columns else [False] * len(df)
        df["label"] = [run_label(bool(e)) for e in emulated]
    else:
        df = pd.DataFrame.from_records([parse_result_text(text)])
        df["label"] = source_label(False)
    return add_derived(df, devices)
