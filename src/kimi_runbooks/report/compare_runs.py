"""One HTML across run folders: which platform or version gives what, on the same scenarios.

`build(run_dirs, out)` reads each folder with `collect` and writes a single self-contained page
with the report's own building blocks: one row per run (platform, model, SGLang, verdict, check
counts), the Pareto chart of every run beside the published references, and for each scenario run
by two runs or more, one row per run with the delta against the first run. plotly.js is inlined
once; nothing is loaded from the network.

A scenario run several times (repeats, speed/repeats.py) shows its mean ± 95% interval and N, and the
delta of each main metric is judged (report/intervals.py): "noise" when Welch's 95% interval for the
difference of the two means contains 0, "real change" when it does not, and "no interval" when either
run is a single run (nothing is then called noise or a change).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go

from ..origin import source_label
from ..rundir import RunFolder, outputs_base, write_redacted
from ..speed import reference_frame
from ..speed.figures import add_pareto
from ..speed.repeats import MAIN_METRICS, Difference
from ..speed.saturation import concurrency_label
from .cards import sglang_version
from .collect import RunData, collect
from .figures import OTHER_REF, styled
from .html import external_references
from .html_parts import COLOURS, STYLE, Column, badge, esc, fmt_number, fmt_percent, table, wrap
from .intervals import judge, mean_cell, runs_of
from .verdict import verdict

RUN_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf")
SCENARIO_METRICS = (
    ("output_throughput", "output tok/s", "higher"),
    ("output_tok_s_per_gpu", "tok/s/device", "higher"),
    ("tok_s_per_user", "tok/s/user", "higher"),
    ("median_ttft_ms", "TTFT p50 (ms)", "lower"),
    ("median_tpot_ms", "TPOT p50 (ms)", "lower"),
    ("goodput_tok_s", "goodput tok/s", "higher"),
    ("usd_per_million_output_tokens", "$/M tokens", "lower"),
)


def _origin(data: RunData) -> str:
    return f"{data.platform} {source_label(data.emulated, upper=True)} ({data.run_id})"


def runs_section(runs: list[RunData]) -> str:
    rows = []
    for data in runs:
        v = verdict(data)
        counts = {k: sum(r.status == k for r in data.invoke or []) for k in ("pass", "fail")}
        ok = (
            0 if data.speed is None or "status" not in data.speed.columns else int((data.speed["status"] == "ok").sum())
        )
        rows.append(
            {
                "run": data.run_id,
                "platform": data.platform,
                "model": data.model,
                "sglang": sglang_version(data),
                "origin": source_label(data.emulated, upper=True),
                "verdict": v.level,
                "checks": f"{counts['pass']} passed, {counts['fail']} failed" if data.invoke is not None else None,
                "speed": ok,
            }
        )
    columns = [
        Column("run", "run"),
        Column("platform", "platform"),
        Column("model", "model"),
        Column("sglang", "SGLang"),
        Column("origin", "origin"),
        Column("verdict", "verdict", "raw", render=lambda v, r: badge(v, COLOURS.get(v, "#333"))),
        Column("checks", "invoke checks"),
        Column("speed", "speed scenarios ok", "int"),
    ]
    return table(columns, rows)


def speed_rows(runs: list[RunData]) -> pd.DataFrame:
    """Every run's successful speed rows, each with platform, run id and origin."""
    parts = []
    for i, data in enumerate(runs):
        if data.speed is None or data.speed.empty:
            continue
        df = data.speed[data.speed["status"] == "ok"].copy() if "status" in data.speed.columns else data.speed.copy()
        df["platform"], df["run_id"], df["origin"], df["run_index"] = data.platform, data.run_id, _origin(data), i
        parts.append(df)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def scenario_sections(rows: pd.DataFrame, runs: list[RunData]) -> str:
    """Scenarios two runs or more share: one row per run, deltas against the first run."""
    if rows.empty:
        return '<p class="note">No speed results in these run folders.</p>'
    shared = [str(s) for s, g in rows.groupby("scenario") if g["run_index"].nunique() >= 2]
    if not shared:
        return '<p class="note">No scenario was run by two runs or more.</p>'
    parts = []
    for scenario in sorted(shared):
        group = rows[rows["scenario"] == scenario].copy()
        group = group.sort_values("run_index")
        base = group.iloc[0]
        records: list[dict[str, Any]] = []
        for _, row in group.iterrows():
            rec: dict[str, Any] = {
                "origin": row["origin"],
                "concurrency": concurrency_label(
                    row.get("max_concurrency"), row.get("effective_concurrency"), row.get("emulator_behind")
                ),
                "n_runs": runs_of(row),
            }
            for key, label, _better in SCENARIO_METRICS:
                rec[label] = row.get(key)
                for suffix in ("_ci_low", "_ci_high"):
                    rec[label + suffix] = row.get(key + suffix)
                if row["run_index"] != base["run_index"] and _num(base.get(key)) and _num(row.get(key)):
                    rec[label + " Δ"] = float(row[key]) / float(base[key]) - 1
                    rec[label + " judged"] = judge(base, row, key) if key in MAIN_METRICS else None
            records.append(rec)
        columns = [Column("origin", "run"), Column("concurrency", "concurrency (effective)")]
        columns.append(Column("n_runs", "N (runs)", "int"))
        for key, label, better in SCENARIO_METRICS:
            columns.append(mean_cell(label, label) if key in MAIN_METRICS else Column(label, label, "num"))
            columns.append(Column(label + " Δ", "Δ vs first", "raw", render=_delta(better, label)))
        parts.append(f"<h3>{esc(scenario)}</h3>" + table(columns, records))
    return JUDGED_NOTE + "".join(parts)


JUDGED_NOTE = (
    '<p class="note">Values of a scenario run N > 1 times are means ± the half-width of their 95% interval '
    "(Student t). The Δ of TTFT, TPOT, output tok/s and goodput is judged by Welch's 95% interval for the "
    "difference of the two means: <b>noise</b> when it contains 0, <b>real change</b> when it excludes 0; "
    "when either run is a single run there is no interval, and the Δ says so instead of calling it noise or "
    "a change (set repeats to 2 or more on both runs). Welch's interval rather than asking whether the two "
    "95% intervals overlap: overlapping intervals can still hide a difference significant at 5%. The other "
    "columns show the Δ only.</p>"
)


def _num(value: Any) -> bool:
    try:
        return float(value) == float(value) and float(value) != 0
    except (TypeError, ValueError):
        return False


def _delta(better: str, label: str) -> Any:
    def render(value: Any, row: Any) -> str:
        if value is None:
            return "–"
        judged = row.get(label + " judged")
        if isinstance(judged, Difference):
            up = value > 0 if better == "higher" else value < 0
            cls = ("ok" if up else "bad") if judged.verdict == "real change" else "meh"
            said = "no interval (single run)" if judged.verdict == "no interval" else judged.verdict
            return (
                f'<span class="{cls}" title="{esc(judged.reason)}">{fmt_percent(value, signed=True)} {esc(said)}</span>'
            )
        good = value > 0.1 if better == "higher" else value < -0.1
        bad = value < -0.1 if better == "higher" else value > 0.1
        cls = "ok" if good else "bad" if bad else "meh"
        return f'<span class="{cls}">{fmt_percent(value, signed=True)}</span>'

    return render


def pareto_all(rows: pd.DataFrame, refs: pd.DataFrame, runs: list[RunData]) -> go.Figure:
    x, y = "tok_s_per_user", "output_tok_s_per_gpu"
    fig = go.Figure()
    if not refs.empty and {x, y} <= set(refs.columns):
        ok = refs[refs["status"] == "ok"].dropna(subset=[x, y]) if "status" in refs.columns else refs
        for platform, part in ok.groupby("platform"):
            add_pareto(fig, part, x, y, f"reference ({platform})", marker={"color": OTHER_REF, "size": 7})
    for i, data in enumerate(runs):
        part = rows[rows["run_index"] == i].dropna(subset=[x, y]) if not rows.empty else rows
        if part.empty:
            continue
        colour = RUN_COLOURS[i % len(RUN_COLOURS)]
        marker = {"color": colour, "symbol": "diamond", "size": 9}
        add_pareto(fig, part, x, y, _origin(data), marker=marker, line={"color": colour}, legendgroup=str(i))
    fig.update_xaxes(title_text="tok/s per user (1000 / median TPOT)")
    fig.update_yaxes(title_text="output tok/s per device")
    return styled(
        fig,
        f"{len(runs)} run(s) beside the published references",
        "Pareto: more to the right serves each user faster, higher serves more per device",
    )


def build(folders: Iterable[RunFolder], out: str | Path | None = None) -> Path:
    """Write the comparison page; returns its path (default outputs/compare-<stamp>.html)."""
    runs = [collect(f) for f in folders]
    if not runs:
        raise ValueError("no run folders given. Fix: pass one or more outputs/<run id>/ folders.")
    platforms = sorted({d.platform for d in runs if d.platform})
    refs = reference_frame(platforms) if platforms else pd.DataFrame()
    rows = speed_rows(runs)
    emulated = any(d.emulated for d in runs)
    head = (
        f'<div class="head"><span class="title">{len(runs)} run(s) compared</span>'
        f'<span class="note">written {esc(datetime.now(UTC).isoformat(timespec="seconds"))}</span>'
        + (badge("EMULATED runs included", COLOURS["WARN"]) if emulated else "")
        + "</div>"
    )
    body = (
        STYLE
        + head
        + "<h2>Runs</h2>"
        + runs_section(runs)
        + "<h2>Same scenario across runs</h2>"
        + scenario_sections(rows, runs)
    )
    figure = pareto_all(rows, refs, runs).to_html(full_html=False, include_plotlyjs=True)
    sources = sorted({str(s) for s in refs.get("source", [])}) if not refs.empty else []
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Kimi runbooks comparison</title></head>"
        "<body style='margin:24px'>"
        + wrap(body)
        + "<h2 style='font-family:sans-serif'>Throughput per device against tok/s per user</h2>"
        + figure
        + wrap(f'<p class="note">References: {esc("; ".join(sources) or "none")}</p>')
        + "</body></html>"
    )
    found = external_references(page)
    if found:
        raise RuntimeError(f"the comparison would load external resources: {found[:3]}")
    return write_redacted(Path(out) if out else report_path(), page)


def report_path() -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return outputs_base() / f"compare-{stamp}.html"


__all__ = ["build", "fmt_number", "report_path", "runs_section", "scenario_sections", "speed_rows"]
