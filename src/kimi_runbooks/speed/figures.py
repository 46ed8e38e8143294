"""Plotly figures of a speed run beside the published references.

Every trace name says where its numbers come from: "measured" or "emulated" (this run) or
"reference: <source>", so a screenshot cannot pass an emulated curve off as hardware.
Each function takes the tables from speed.results.load_results / speed.references.reference_frame
and returns a plotly go.Figure.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .references import family

_DASH = {"reference": "dot", "measured": "solid", "emulated": "dash"}


def _origin(row: Any) -> str:
    label = row.get("label", "measured")
    if label == "reference":
        return f"reference: {row.get('source', '?')}"
    return str(label)


def _prepare(df: pd.DataFrame | None) -> pd.DataFrame:
    if df is None or df.empty:
        return pd.DataFrame()
    df = df.copy()
    if "status" in df.columns:
        df = df[df["status"] == "ok"]
    if "family" not in df.columns:
        df["family"] = [family(s) for s in df["scenario"]]
    df["origin"] = [_origin(r) for _, r in df.iterrows()]
    if "label" not in df.columns:
        df["label"] = "measured"
    return df


def _frames(run: pd.DataFrame | None, references: pd.DataFrame | None) -> pd.DataFrame:
    parts = [p for p in (_prepare(run), _prepare(references)) if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _series(df: pd.DataFrame, y: str, families: list[str] | None) -> Iterator[tuple[str, str, str, pd.DataFrame]]:
    if df.empty or y not in df.columns:
        return
    data = df[df["family"].isin(families)] if families else df
    for (fam, origin), part in data.groupby(["family", "origin"], sort=True):
        part = part.dropna(subset=["max_concurrency", y]).sort_values("max_concurrency")
        if part.empty:
            continue
        yield str(fam), str(origin), str(part["label"].iloc[0]), part


def throughput_vs_concurrency(
    run: pd.DataFrame | None,
    references: pd.DataFrame | None = None,
    *,
    metric: str = "output_throughput",
    families: list[str] | None = None,
) -> go.Figure:
    """Throughput against max concurrency, one line per scenario family and origin."""
    df = _frames(run, references)
    fig = go.Figure()
    for fam, origin, label, part in _series(df, metric, families):
        fig.add_trace(
            go.Scatter(
                x=part["max_concurrency"],
                y=part[metric],
                mode="lines+markers",
                name=f"{fam} — {origin}",
                line={"dash": _DASH.get(label, "solid")},
                hovertext=part["scenario"],
            )
        )
    fig.update_layout(
        title=f"{metric} vs concurrency (measured/emulated run vs reference)",
        xaxis_title="max concurrency",
        yaxis_title=f"{metric} (tok/s)",
        xaxis_type="log",
        legend_title="scenario family — origin",
    )
    return fig


def latency_vs_concurrency(
    run: pd.DataFrame | None, references: pd.DataFrame | None = None, *, families: list[str] | None = None
) -> go.Figure:
    """TTFT and TPOT against concurrency: median (markers+line) and p99 (open markers)."""
    df = _frames(run, references)
    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT (ms)", "TPOT (ms)"))
    for col, kind in ((1, "ttft"), (2, "tpot")):
        for stat, symbol in (("median", "circle"), ("p99", "circle-open")):
            for fam, origin, label, part in _series(df, f"{stat}_{kind}_ms", families):
                fig.add_trace(
                    go.Scatter(
                        x=part["max_concurrency"],
                        y=part[f"{stat}_{kind}_ms"],
                        mode="lines+markers",
                        marker={"symbol": symbol},
                        line={"dash": _DASH.get(label, "solid")},
                        name=f"{fam} {stat} {kind.upper()} — {origin}",
                        hovertext=part["scenario"],
                    ),
                    row=1,
                    col=col,
                )
    fig.update_xaxes(type="log", title_text="max concurrency")
    fig.update_layout(
        title="TTFT and TPOT vs concurrency, median and p99 (run vs reference)", legend_title="family stat — origin"
    )
    return fig


def pareto_front(points: pd.DataFrame, x: str, y: str) -> pd.DataFrame:
    """Points not beaten on both axes (higher x and higher y are better), sorted by x."""
    pts = points.dropna(subset=[x, y]).sort_values([x, y], ascending=[False, False])
    best, keep = -math.inf, []
    for idx, row in pts.iterrows():
        if row[y] > best:
            keep.append(idx)
            best = row[y]
    return pts.loc[keep].sort_values(x)


def add_pareto(
    fig: go.Figure,
    points: pd.DataFrame,
    x: str,
    y: str,
    name: str,
    *,
    marker: dict[str, Any],
    line: dict[str, Any] | None = None,
    legendgroup: str | None = None,
) -> None:
    """One group's points (hover: the scenario) and, with `line`, its Pareto frontier: the one
    drawing of a Pareto chart's group, for this stage's chart, the report's and the comparison page's."""
    fig.add_trace(
        go.Scatter(
            x=points[x],
            y=points[y],
            mode="markers",
            name=name,
            hovertext=points["scenario"],
            legendgroup=legendgroup,
            marker=marker,
        )
    )
    if line is not None:
        fig.add_trace(frontier_line(points, x, y, f"{name} frontier", line, legendgroup=legendgroup, showlegend=False))


def frontier_line(points: pd.DataFrame, x: str, y: str, name: str, line: dict[str, Any], **trace: Any) -> go.Scatter:
    """The Pareto frontier of `points` (pareto_front) as one line trace; `trace` adds plotly options."""
    front = pareto_front(points, x, y)
    return go.Scatter(x=front[x], y=front[y], mode="lines", name=name, line=line, **trace)


def _group(row: Any) -> str:
    platform = row.get("platform")
    platform = platform if isinstance(platform, str) and platform else None
    if row.get("label") == "reference":
        return f"{platform or '?'} — {row['origin']}"
    return f"this run{f' ({platform})' if platform else ''} — {row['origin']}"


def pareto(
    run: pd.DataFrame | None,
    references: pd.DataFrame | None = None,
    *,
    y: str = "output_tok_s_per_gpu",
    x: str = "tok_s_per_user",
) -> go.Figure:
    """Throughput per GPU against tok/s per user across platforms, with each Pareto frontier."""
    df = _frames(run, references)
    fig = go.Figure()
    if not df.empty and {x, y} <= set(df.columns):
        df["group"] = [_group(r) for _, r in df.iterrows()]
        for group, part in df.groupby("group", sort=True):
            part = part.dropna(subset=[x, y])
            if part.empty:
                continue
            label = str(part["label"].iloc[0])
            marker = {"symbol": "diamond" if label != "reference" else "circle"}
            add_pareto(
                fig,
                part,
                x,
                y,
                str(group),
                marker=marker,
                line={"dash": _DASH.get(label, "solid")},
                legendgroup=str(group),
            )
    fig.update_layout(
        title="Pareto: throughput per GPU vs tok/s per user (references + this run)",
        xaxis_title=f"{x} (1000 / median TPOT)",
        yaxis_title=y,
        legend_title="platform — origin",
    )
    return fig


def heatmap(df: pd.DataFrame, *, value: str = "output_throughput", title: str | None = None) -> go.Figure:
    """Context x concurrency grid of `value`; over-capacity cells shown grey and marked.

    Takes matrix reference rows or a run of matrix scenarios (needs context_tokens,
    max_concurrency, status; run rows get context_tokens from the scenario catalog).
    """
    if df.empty:
        return go.Figure(layout={"title": title or "context x concurrency (no matrix rows)"})
    data = df.copy()
    if "context_tokens" not in data.columns or data["context_tokens"].isna().any():
        from ..catalog import load_catalog

        cat = load_catalog()
        data["context_tokens"] = [
            (cat.scenarios[s].matrix or {}).get("context_tokens") if s in cat.scenarios else None
            for s in data["scenario"]
        ]
    data = data.dropna(subset=["context_tokens", "max_concurrency"])
    contexts = sorted({int(c) for c in data["context_tokens"]})
    concs = sorted({int(c) for c in data["max_concurrency"]})
    z: list[list[float | None]] = [[None] * len(concs) for _ in contexts]
    text = [[""] * len(concs) for _ in contexts]
    over: list[list[int | None]] = [[None] * len(concs) for _ in contexts]
    for _, row in data.iterrows():
        i, j = contexts.index(int(row["context_tokens"])), concs.index(int(row["max_concurrency"]))
        status = row.get("status", "ok")
        if status == "over-capacity":
            over[i][j], text[i][j] = 1, "over capacity"
        elif status == "ok" and pd.notna(row.get(value)):
            z[i][j] = float(row[value])
            text[i][j] = f"{float(row[value]):.1f}"
        else:
            text[i][j] = str(status)
    ylabels = [f"{c // 1024}K" if c % 1024 == 0 else str(c) for c in contexts]
    xlabels = [str(c) for c in concs]
    origin = _origin(data.iloc[0]) if len(data) else ""
    fig = go.Figure()
    cells = {"x": xlabels, "y": ylabels}  # three layers over one grid: grey over-capacity cells, values, their labels
    labelled = {"text": text, "texttemplate": "%{text}", **cells}
    grey, clear = [[0, "#bbbbbb"], [1, "#bbbbbb"]], [[0, "rgba(0,0,0,0)"], [1, "rgba(0,0,0,0)"]]
    for layer in (
        {"z": over, **cells, "colorscale": grey, "showscale": False, "hoverinfo": "skip", "name": "over capacity"},
        {"z": z, **labelled, "colorscale": "Viridis", "colorbar": {"title": value}, "name": origin},
        {
            "z": over,
            **labelled,
            "colorscale": clear,
            "showscale": False,
            "hoverinfo": "text",
            "name": "over capacity (not run)",
        },
    ):
        fig.add_trace(go.Heatmap(**layer))
    fig.update_layout(
        title=title or f"{value}: context x concurrency — {origin}; grey = over KV capacity (not run)",
        xaxis_title="concurrency",
        yaxis_title="context",
        xaxis_type="category",
        yaxis_type="category",
    )
    return fig
