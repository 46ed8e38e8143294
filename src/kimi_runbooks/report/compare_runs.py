"""One HTML across run folders: which platform gives what, on the same scenarios.

`build(run_dirs, out)` reads each folder with report.collect, stacks the speed rows (labelled
measured/emulated with the run id), adds the published references of the platforms involved,
and writes a single self-contained page: a runs table (verdicts), the Pareto chart
(speed.figures.pareto: throughput per GPU vs tok/s per user) and one table per scenario.
plotly.js is inlined once; nothing is loaded from the network.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from ..origin import source_label
from ..rundir import outputs_base, write_redacted
from ..speed import pareto, reference_frame
from .collect import RunData, collect
from .html import external_references
from .verdict import verdict

SCENARIO_METRICS = (
    "output_throughput",
    "output_tok_s_per_gpu",
    "tok_s_per_user",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
)


def runs_table(runs: list[RunData]) -> pd.DataFrame:
    rows = []
    for data in runs:
        v = verdict(data)
        rows.append(
            {
                "run": data.run_id,
                "platform": data.platform,
                "model": data.model,
                "source": source_label(data.emulated, upper=True),
                "verdict": v.level,
                "speed scenarios": 0 if data.speed is None else len(data.speed),
            }
        )
    return pd.DataFrame(rows)


def speed_rows(runs: list[RunData]) -> pd.DataFrame:
    """Every run's speed rows, each with platform, run id and origin (measured/emulated + run)."""
    parts = []
    for data in runs:
        if data.speed is None or data.speed.empty:
            continue
        df = data.speed.copy()
        df["platform"] = data.platform
        df["run_id"] = data.run_id
        df["origin"] = [f"{lab} (run {data.run_id})" for lab in df.get("label", [source_label(False)] * len(df))]
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def scenario_tables(rows: pd.DataFrame, references: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """scenario -> one row per run or reference with the key metrics and where each came from."""
    out: dict[str, pd.DataFrame] = {}
    ok = rows[rows["status"] == "ok"] if not rows.empty and "status" in rows.columns else rows
    refs = references.copy()
    if not refs.empty:
        refs["origin"] = [f"reference: {s}" for s in refs["source"]]
    for scenario in sorted(set(ok.get("scenario", [])) | set(refs.get("scenario", []) if not ok.empty else [])):
        parts = [df[df["scenario"] == scenario] for df in (ok, refs) if not df.empty]
        table = pd.concat(parts, ignore_index=True)
        cols = ["platform", "origin", "max_concurrency", *[m for m in SCENARIO_METRICS if m in table.columns]]
        out[scenario] = table[[c for c in cols if c in table.columns]]
    return out


def _frame(df: pd.DataFrame) -> str:
    return df.to_html(index=False, na_rep="-", float_format=lambda v: f"{v:,.4g}", border=0)


def build(run_dirs: Iterable[str | Path], out: str | Path | None = None) -> Path:
    """Write the comparison page; returns its path (default outputs/compare-<stamp>.html)."""
    runs = [collect(d) for d in run_dirs]
    if not runs:
        raise ValueError("no run folders given. Fix: pass one or more outputs/<run id>/ folders.")
    platforms = sorted({d.platform for d in runs if d.platform})
    refs = reference_frame(platforms) if platforms else pd.DataFrame()
    rows = speed_rows(runs)
    fig = pareto(rows if not rows.empty else None, refs if not refs.empty else None)
    parts = [
        f"<h1>Kimi runbooks: {len(runs)} run(s) compared</h1>",
        f"<p>Written {datetime.now(UTC).isoformat(timespec='seconds')}. Every row says where "
        "its numbers came from: measured or EMULATED (with the run id) or reference (with its source).</p>",
    ]
    if any(d.emulated for d in runs):
        parts.append(
            '<div style="background:#ffe08a;border:2px solid #b36b00;padding:8px;font-weight:bold">'
            "EMULATED runs are included: their figures come from the emulator's latency model, "
            "not from hardware.</div>"
        )
    parts += [
        "<h2>Runs</h2>",
        _frame(runs_table(runs)),
        "<h2>Pareto: throughput per GPU vs tok/s per user</h2>",
        fig.to_html(full_html=False, include_plotlyjs=True),
    ]
    tables = scenario_tables(rows, refs) if not rows.empty else {}
    parts.append("<h2>Scenarios</h2>")
    if not tables:
        parts.append("<p><em>No speed results in these run folders.</em></p>")
    for scenario, table in tables.items():
        parts += [f"<h3>{html.escape(scenario)}</h3>", _frame(table)]
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Kimi runbooks comparison</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style></head><body>" + "\n".join(parts) + "</body></html>"
    )
    found = external_references(page)
    if found:
        raise RuntimeError(f"the comparison would load external resources: {found[:3]}")
    return write_redacted(Path(out) if out else report_path(), page)


def report_path() -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return outputs_base() / f"compare-{stamp}.html"
