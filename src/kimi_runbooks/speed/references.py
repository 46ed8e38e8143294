"""Published references as rows, and a run compared with them scenario by scenario.

References come from params/references: `speed` files (bench_serving metrics per scenario),
the RTX PRO 6000 `matrix` (llm-inference-bench cells, mapped onto the matrix scenarios by
context x concurrency; its sustained decode tok/s is put in `output_throughput` and its
per-request tok/s in `tok_s_per_user`, not like-for-like with bench_serving: see
params/scenarios/rtx-pro-6000-matrix.yaml) and Ascend `targets` (SLOs: median TPOT/TTFT
ceilings, mapped via each deployment's benchmark scenario), and the `table` references marked
`compare_only` (never fitted: the Kimi-K3 GB300 figure, a per-GPU total throughput).

Regressions are direction-aware: a throughput below the reference by more than the
tolerance, or a latency above it by more than the tolerance, is flagged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

import pandas as pd

from ..catalog import Catalog, load_catalog
from ..rundir import row_number
from .results import add_derived, run_label

HIGHER_IS_BETTER = {
    "output_throughput",
    "total_throughput",
    "request_throughput",
    "input_throughput",
    "output_tok_s_per_gpu",
    "total_tok_s_per_gpu",
    "tok_s_per_user",
    "max_output_tokens_per_s",
}
LATENCY_METRICS = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms")
"""bench_serving's per-request latency figures a run is read by (the report's speed table shows them too)."""
DEFAULT_METRICS = (
    "output_throughput",
    "total_throughput",
    "output_tok_s_per_gpu",
    "total_tok_s_per_gpu",
    "tok_s_per_user",
    *LATENCY_METRICS,
    "median_e2e_latency_ms",
)


def family(scenario_id: str) -> str:
    """Scenario family: the id without its concurrency suffix (chat-1k1k-c16 -> chat-1k1k; an
    operating-point probe op-tpot@c13 -> op-tpot, speed/operating_point.py)."""
    return re.sub(r"(-|@)c\d+$", "", str(scenario_id))


def better_direction(metric: str) -> str:
    return "higher" if metric in HIGHER_IS_BETTER else "lower"


def _devices(ref: Any, catalog: Catalog) -> int | None:
    launch = getattr(ref, "launch", None) or {}
    tp = launch.get("tp")
    if tp:
        return int(tp) * int(launch.get("pp") or 1)
    platform = catalog.platforms.get(ref.platform)
    return platform.devices if platform else None


def _scenario_fields(catalog: Catalog, scenario_id: str) -> dict[str, Any]:
    sc = catalog.scenarios.get(scenario_id)
    if sc is None:
        return {}
    out: dict[str, Any] = {"input_len": sc.input_len, "output_len": sc.output_len}
    if sc.matrix:
        out["context_tokens"] = sc.matrix.get("context_tokens")
    return out


def _speed_rows(ref: Any, catalog: Catalog) -> list[dict[str, Any]]:
    rows = []
    devices = _devices(ref, catalog)
    for result in getattr(ref, "results", None) or []:
        metrics = dict(result.get("metrics") or {})
        launch = result.get("launch") or {}
        rows.append(
            {
                **metrics,
                **_scenario_fields(catalog, result["scenario"]),
                "scenario": result["scenario"],
                "status": "ok",
                "devices": int(launch["tp"]) if launch.get("tp") else devices,
            }
        )
    return rows


def _matrix_rows(ref: Any, catalog: Catalog) -> list[dict[str, Any]]:
    cells = {
        (sc.matrix.get("context_tokens"), sc.matrix.get("concurrency")): sc.id
        for sc in catalog.scenarios.values()
        if sc.matrix
    }
    devices = _devices(ref, catalog)
    rows = []
    for row in getattr(ref, "rows", None) or []:
        if row.get("phase") != "decode":
            continue  # prefill rows are prompt tok/s at concurrency 1, not a decode cell
        key = (row.get("context_tokens"), row.get("concurrency"))
        over = row.get("status") == "over-capacity"
        rows.append(
            {
                "scenario": cells.get(key, f"matrix-ctx{key[0]}-c{key[1]}"),
                "status": "over-capacity" if over else "ok",
                "reference_status": row.get("status"),
                "context_tokens": key[0],
                "max_concurrency": key[1],
                "devices": devices,
                "output_throughput": row.get("total_tok_s"),
                "tok_s_per_user": row.get("per_request_tok_s"),
                "median_ttft_ms": row.get("median_ttft_ms"),
                "median_itl_ms": row.get("median_itl_ms"),
            }
        )
    return rows


def _target_rows(ref: Any, catalog: Catalog) -> list[dict[str, Any]]:
    rows = []
    for row in getattr(ref, "rows", None) or []:
        dep = catalog.deployments.get(row.get("deployment"))
        scenario_id = dep.benchmark if dep and dep.benchmark else row.get("deployment")
        sc = catalog.scenarios.get(scenario_id)
        rows.append(
            {
                "scenario": scenario_id,
                "status": "ok",
                "devices": row.get("cards"),
                "max_concurrency": sc.max_concurrency if sc else None,
                "median_tpot_ms": row.get("tpot_ms"),
                "median_ttft_ms": row.get("ttft_ms"),
                "category": row.get("category"),
            }
        )
    return rows


PER_GPU = {"total_tok_s_per_gpu": "total_throughput", "output_tok_s_per_gpu": "output_throughput"}


def _compare_only_rows(ref: Any, catalog: Catalog) -> list[dict[str, Any]]:
    """A never-fitted `table` (compare_only, e.g. the Kimi-K3 GB300 figure): one row per published run.
    A per-GPU figure is carried as the whole server's throughput (x devices), which add_derived divides
    back, so a run of the same scenario compares with it like any other reference."""
    if not getattr(ref, "compare_only", False):
        return []  # fitted tables are compared in the performance model's validation
    launch = getattr(ref, "launch", None) or {}
    platform = catalog.platforms.get(ref.platform)
    devices = _devices(ref, catalog)
    if not launch.get("tp") and platform is not None:
        devices = platform.devices_per_node * int(launch.get("nnodes") or 1)
    rows = []
    for row in getattr(ref, "rows", None) or []:
        metrics = dict(row.get("metrics") or {})
        for per_gpu, whole in PER_GPU.items():
            if per_gpu in metrics and devices:
                metrics[whole] = float(metrics.pop(per_gpu)) * devices
        rows.append(
            {
                **metrics,
                "scenario": row["scenario"],
                "status": "ok",
                "devices": devices,
                "max_concurrency": row.get("concurrency"),
                "input_len": row.get("input_len"),
                "output_len": row.get("output_len"),
            }
        )
    return rows


_ROWS = {"speed": _speed_rows, "matrix": _matrix_rows, "targets": _target_rows, "table": _compare_only_rows}


def reference_frame(platforms: Iterable[str] | str | None = None, catalog: Catalog | None = None) -> pd.DataFrame:
    """Every published speed/matrix/target row (None: all platforms), labelled "reference".

    Ascend targets are SLO ceilings (kind "targets"); their tok/s per user is derived from the
    target TPOT, so they show where a run must be, not what was measured.
    """
    catalog = catalog or load_catalog()
    wanted = None if platforms is None else {platforms} if isinstance(platforms, str) else set(platforms)
    records = []
    for ref in catalog.references.values():
        if ref.kind not in _ROWS or (wanted is not None and ref.platform not in wanted):
            continue
        for row in _ROWS[ref.kind](ref, catalog):
            row.update(
                platform=ref.platform,
                model=ref.model,
                reference_id=ref.id,
                reference_kind=ref.kind,
                source=ref.source,
                label="reference",
            )
            if "max_concurrency" not in row or row["max_concurrency"] is None:
                sc = catalog.scenarios.get(row["scenario"])
                row["max_concurrency"] = sc.max_concurrency if sc else None
            records.append(row)
    df = pd.DataFrame.from_records(records)
    if df.empty:
        return df
    df["family"] = [family(s) for s in df["scenario"]]
    return add_derived(df)


def compare(
    run: pd.DataFrame,
    references: pd.DataFrame,
    *,
    tolerance: float = 0.1,
    metrics: Iterable[str] = DEFAULT_METRICS,
) -> pd.DataFrame:
    """One row per (scenario, reference, metric) both sides have: values, ratio, regression.

    ratio = run / reference. regression: higher-is-better metric with ratio < 1 - tolerance,
    or lower-is-better metric with ratio > 1 + tolerance. A scenario run `repeats` times is compared
    by its mean; `run_n` says over how many runs (1: a single run). Emulated runs keep the flag but are
    labelled "emulated" (the emulator imitates a platform; it does not measure one).
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1) (got {tolerance}). Fix: e.g. tolerance=0.1 for 10%.")
    columns = [
        "scenario",
        "metric",
        "better",
        "run_value",
        "run_label",
        "run_n",
        "reference_value",
        "reference_label",
        "reference_id",
        "reference_source",
        "platform",
        "ratio",
        "regression",
        "note",
    ]
    if run.empty or references.empty:
        return pd.DataFrame(columns=columns)
    ok = run[run["status"] == "ok"] if "status" in run.columns else run
    refs = references[references["status"] == "ok"] if "status" in references.columns else references
    records = []
    for _, r in ok.iterrows():
        label = r.get("label") or run_label(bool(r.get("emulated")))
        runs = row_number(r.get("n_runs"))
        n = int(runs) if math.isfinite(runs) and runs >= 1 else 1
        for _, ref in refs[refs["scenario"] == r["scenario"]].iterrows():
            for metric in metrics:
                a, b = row_number(r.get(metric)), row_number(ref.get(metric))
                if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
                    continue
                ratio = a / b
                better = better_direction(metric)
                regression = ratio < 1 - tolerance if better == "higher" else ratio > 1 + tolerance
                note = "emulated run: not a hardware measurement" if label == "emulated" else ""
                if n > 1:
                    note = (note + "; " if note else "") + f"mean of {n} runs"
                if ref.get("reference_kind") == "targets":
                    note = (note + "; " if note else "") + "reference is a target (SLO ceiling)"
                records.append(
                    {
                        "scenario": r["scenario"],
                        "metric": metric,
                        "better": better,
                        "run_value": a,
                        "run_label": label,
                        "run_n": n,
                        "reference_value": b,
                        "reference_label": f"reference: {ref.get('source')}",
                        "reference_id": ref.get("reference_id"),
                        "reference_source": ref.get("source"),
                        "platform": ref.get("platform"),
                        "ratio": ratio,
                        "regression": bool(regression),
                        "note": note,
                    }
                )
    return pd.DataFrame.from_records(records, columns=columns)


def compare_wide(comparison: pd.DataFrame) -> pd.DataFrame:
    """The comparison pivoted: one row per scenario and reference, a `<metric> ratio` column each."""
    if comparison.empty:
        return comparison
    wide = comparison.pivot_table(
        index=["scenario", "reference_id", "run_label"], columns="metric", values="ratio", aggfunc="first"
    )
    wide.columns = [f"{c} ratio" for c in wide.columns]
    flags = comparison.groupby(["scenario", "reference_id", "run_label"])["regression"].any()
    wide["regression"] = flags
    return wide.reset_index()
