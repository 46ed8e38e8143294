"""The report's figures: one colour per origin, short legends, and a title that states the finding.

Origins: this run (blue), the platform's published reference (orange), other runs (green), other
platforms' references (grey). Sources are named once, in the caption under each figure, not on
every trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..speed import family
from ..speed.figures import add_pareto

RUN, REFERENCE, OTHER_RUN, OTHER_REF = "#1f77b4", "#ff7f0e", "#2ca02c", "#9aa3b2"
DASHES = {RUN: "solid", REFERENCE: "dot", OTHER_RUN: "dash", OTHER_REF: "dot"}


def finding(findings: Sequence[dict[str, Any]], label: str = "output tok/s", tolerance: float = 0.10) -> str:
    """One sentence: where this run stands against its references on `label`."""
    deltas = [(f["scenario"], f[label]["delta"]) for f in findings if label in f]
    if not deltas:
        return "this run beside the platform's published results (no reference at the same scenarios)"
    worse = [s for s, d in deltas if d < -tolerance]
    better = [s for s, d in deltas if d > tolerance]
    if not worse and not better:
        return f"{label} within {tolerance:.0%} of the reference in every scenario ({len(deltas)})"
    parts = []
    if worse:
        parts.append(
            f"{len(worse)} of {len(deltas)} scenarios below the reference by more than {tolerance:.0%}"
            f" ({', '.join(worse[:3])}{'…' if len(worse) > 3 else ''})"
        )
    if better:
        parts.append(f"{len(better)} above it by more than {tolerance:.0%}")
    return f"{label}: " + "; ".join(parts)


def _ok(df: pd.DataFrame | None) -> pd.DataFrame:
    if df is None or df.empty:
        return pd.DataFrame()
    out = df[df["status"] == "ok"] if "status" in df.columns else df
    out = out.copy()
    out["family"] = [family(s) for s in out["scenario"]]
    return out


def styled(fig: go.Figure, title: str, subtitle: str) -> go.Figure:
    """The report's look for a figure: its finding as the title, what to read as the subtitle."""
    fig.update_layout(
        title={"text": f"{title}<br><sup>{subtitle}</sup>", "x": 0.01},
        template="plotly_white",
        height=420,
        margin={"l": 60, "r": 20, "t": 70, "b": 90},
        legend={"orientation": "h", "y": -0.28, "x": 0.0, "yanchor": "top"},
    )
    return fig


def pareto_figure(
    run: pd.DataFrame | None, refs: pd.DataFrame | None, run_name: str, ref_name: str, title: str
) -> go.Figure:
    """Throughput per device against tok/s per user, this run and the reference, each with its frontier."""
    x, y = "tok_s_per_user", "output_tok_s_per_gpu"
    fig = go.Figure()
    for df, name, colour, symbol in ((_ok(refs), ref_name, REFERENCE, "circle"), (_ok(run), run_name, RUN, "diamond")):
        if df.empty or not {x, y} <= set(df.columns):
            continue
        pts = df.dropna(subset=[x, y])
        if pts.empty:
            continue
        marker = {"color": colour, "symbol": symbol, "size": 9}
        add_pareto(
            fig, pts, x, y, name, marker=marker, line={"color": colour, "dash": DASHES[colour]}, legendgroup=name
        )
    fig.update_xaxes(title_text="tok/s per user (1000 / median TPOT)")
    fig.update_yaxes(title_text="output tok/s per device")
    return styled(fig, title, "Pareto: more to the right serves each user faster, higher serves more per device")


def concurrency_figure(
    run: pd.DataFrame | None, refs: pd.DataFrame | None, run_name: str, ref_name: str, title: str
) -> go.Figure:
    """Output throughput, median TTFT and median TPOT against concurrency, per scenario family."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=("output tok/s", "median TTFT (ms)", "median TPOT (ms)"))
    shown: set[str] = set()
    for df, name, colour in ((_ok(refs), ref_name, REFERENCE), (_ok(run), run_name, RUN)):
        if df.empty or "max_concurrency" not in df.columns:
            continue
        for fam, part in df.groupby("family", sort=True):
            part = part.dropna(subset=["max_concurrency"]).sort_values("max_concurrency")
            for col, metric in enumerate(("output_throughput", "median_ttft_ms", "median_tpot_ms"), 1):
                if metric not in part.columns or part[metric].isna().all():
                    continue
                fig.add_trace(
                    go.Scatter(
                        x=part["max_concurrency"],
                        y=part[metric],
                        mode="lines+markers",
                        name=name,
                        legendgroup=name,
                        showlegend=name not in shown,
                        hovertext=[f"{fam}"] * len(part),
                        line={"color": colour, "dash": DASHES[colour]},
                    ),
                    row=1,
                    col=col,
                )
                shown.add(name)
    fig.update_xaxes(type="log", title_text="max concurrency")
    return styled(fig, title, "each line is one scenario family (input/output lengths); hover for its name")


def caption(sources: Sequence[str]) -> str:
    unique = list(dict.fromkeys(s for s in sources if s))
    return "Reference: " + "; ".join(unique) if unique else "No published reference for this platform."
