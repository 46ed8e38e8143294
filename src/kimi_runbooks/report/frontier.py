"""The operating point in the report: each search's probes as a frontier (tok/s per user against output
tok/s per device), the chosen point marked, and one line saying what was found.

Which probe met the SLO is judged again from the raw rows (speed.operating_point.summaries: the
SLO and clock each probe recorded); where each probe sits comes from the report's speed table, so an
emulated run's points are rescaled to time scale 1 like every other figure. A search with fewer than
MIN_PROBES probes holding both numbers is said in a note, not drawn, and a probe that failed has no
point (it is named in the line instead of being drawn at zero). plotly is imported only to draw,
so the speed section's line costs a report with nothing to draw no plotly import.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..rundir import RunFolder, read_jsonl
from ..speed.operating_point import SearchResult, summaries
from .figure_inputs import TooFew, figure_origin, finite_number

if TYPE_CHECKING:
    import plotly.graph_objects as go

MIN_PROBES = 3
"""Probes with both numbers a search needs before its frontier is drawn."""
TOO_FEW_PROBES = TooFew(
    MIN_PROBES,
    "frontier",
    "probe(s) with tok/s per user and per device",
    "a frontier needs",
    "a wider bracket or a smaller step gives more",
)
X, Y = "tok_s_per_user", "output_tok_s_per_gpu"


def searches(run_dir: Any) -> list[SearchResult]:
    """Every operating-point search of a run folder, rebuilt from its bench.jsonl."""
    folder = RunFolder(run_dir)
    return summaries(read_jsonl(folder.bench)) if folder.bench.is_file() else []


def probe_points(result: SearchResult, speed: pd.DataFrame | None) -> pd.DataFrame:
    """One row per probe with a tok/s per user and a tok/s per device (value, met, why, x, y)."""
    by_id: dict[str, dict[Any, Any]] = {}
    if speed is not None and not speed.empty and "scenario" in speed.columns:
        by_id = {str(r["scenario"]): r for r in speed.to_dict(orient="records")}
    rows = []
    for probe in result.probes:
        if probe.phase == "confirm":  # the confirmation runs are one collapsed row, said in the line
            continue
        rec = by_id.get(probe.scenario, {})
        x, y = finite_number(rec.get(X)), finite_number(rec.get(Y))
        if x is None or y is None or probe.status != "ok":
            continue
        rows.append({"scenario": probe.scenario, "value": probe.value, "met": probe.met, "why": probe.why, X: x, Y: y})
    return pd.DataFrame(rows, columns=["scenario", "value", "met", "why", X, Y])


def _slo_text(result: SearchResult) -> str:
    slo = ", ".join(f"{k} <= {v:g}" for k, v in result.slo.items())
    return f"{slo} ({result.criterion})"


def frontier_figure(result: SearchResult, points: pd.DataFrame, origin: str) -> go.Figure:
    """Every probe a point (met: filled, missed: open), their Pareto frontier, the chosen point a star."""
    import plotly.graph_objects as go

    from ..speed.figures import frontier_line
    from .figures import OTHER_REF, RUN, styled

    fig = go.Figure()
    judged = points["met"].map(lambda m: "unjudged" if m is None or m != m else bool(m))  # None/NaN: not judged
    for met, name, symbol in (
        (True, "met the SLO", "circle"),
        (False, "missed the SLO", "circle-open"),
        ("unjudged", "not judged (emulator behind its latency model)", "x-open"),
    ):
        part = points[judged == met]
        if part.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=part[X],
                y=part[Y],
                mode="markers+text",
                text=[f"{v:g}" for v in part["value"]],
                textposition="top center",
                hovertext=[f"{s}: {w}" for s, w in zip(part["scenario"], part["why"])],
                name=f"probe, {name} ({origin})",
                marker={"color": RUN if met is True else OTHER_REF, "symbol": symbol, "size": 10},
            )
        )
    judged_points = points[judged != "unjudged"]  # a host-bound point is not on the model's frontier
    fig.add_trace(frontier_line(judged_points, X, Y, "frontier of the probes", {"color": RUN, "dash": "dot"}))
    chosen = points[points["value"] == result.best] if result.best is not None else points.iloc[0:0]
    if not chosen.empty:
        fig.add_trace(
            go.Scatter(
                x=chosen[X],
                y=chosen[Y],
                mode="markers",
                name=f"operating point: {result.over} {result.best:g}",
                marker={"color": RUN, "symbol": "star", "size": 18, "line": {"width": 1, "color": "black"}},
            )
        )
    fig.update_xaxes(title_text="tok/s per user (1000 / median TPOT)")
    fig.update_yaxes(title_text="output tok/s per device")
    return styled(fig, _title(result, chosen), f"{result.scenario}: every probe of the search, {origin}")


def _title(result: SearchResult, chosen: pd.DataFrame) -> str:
    if result.best is None and result.probes and len(result.failed) == len(result.probes):
        return "no probe ran to the end: every probe failed to run"
    if result.best is None:
        return f"no probe met {_slo_text(result)}"
    text = f"operating point {result.over} {result.best:g} meets {_slo_text(result)}"
    if not chosen.empty:
        text += f": {chosen[X].iloc[0]:.1f} tok/s per user, {chosen[Y].iloc[0]:.0f} tok/s per device"
    return text


def summary_line(result: SearchResult, points: pd.DataFrame, origin: str) -> str:
    """The table line: the value found, the bracket, the probes (failed ones named) and the point."""
    failed = result.failed
    confirming = sum(p.phase == "confirm" for p in result.probes)
    probes = f"{len(result.probes) - confirming} probe(s), {confirming} confirmation run(s)" + (
        f", failed: {', '.join(f'{p.scenario} ({p.why})' for p in failed)}" if failed else ""
    )
    if result.best is None and result.probes and len(failed) == len(result.probes):
        found = f"no {result.over} ran to the end"  # a dead server is not a missed SLO
    elif result.best is None:
        found = f"no {result.over} met it"
    else:
        found = f"highest {result.over} meeting it: {result.best:g}"
        unjudged_above = any(p.met is None and p.value == result.above for p in result.probes)
        found += (
            f" (next probe above, {result.above:g}, {'not judged' if unjudged_above else 'missed'})"
            if result.above is not None
            else " (the top of the bracket)"
        )
        chosen = points[points["value"] == result.best]
        if not chosen.empty:
            found += f"; {chosen[X].iloc[0]:.1f} tok/s per user, {chosen[Y].iloc[0]:.0f} output tok/s per device"
    note = f"; {result.note}" if result.note else ""
    if result.knee_note and result.knee_note != result.note:
        note += f"; {result.knee_note}"
    return (
        f"{result.scenario} (SLO {_slo_text(result)}, step {result.step:g}): {_confirmed_text(result)}{found}; "
        f"{probes}{note} [{origin}]"
    )


def _confirmed_text(result: SearchResult) -> str:
    """What the fresh confirmation runs showed: the operating point a planner can use, or why there is none."""
    confirmation = result.confirmation
    if not confirmation:
        return "not confirmed by fresh runs (confirm_repeats 0); " if result.best is not None else ""
    if result.confirmed is None:
        if any(p.met is None for p in result.probes if p.phase == "confirm"):  # the emulator fell behind
            return f"NOT REPRESENTATIVE (not judged, not confirmed): {confirmation['note']}; "
        return f"NOT CONFIRMED: {confirmation['note']}; "
    return f"operating point {result.over} {result.confirmed:g}, confirmed: {confirmation['note']}; "


def operating_point_lines(run_dir: Any, speed: pd.DataFrame | None, emulated: bool, run_id: str | None) -> list[str]:
    """A line per search (the speed section's table line)."""
    origin = figure_origin(speed, emulated, run_id)
    return [summary_line(result, probe_points(result, speed), origin) for result in searches(run_dir)]


def operating_points(
    run_dir: Any, speed: pd.DataFrame | None, emulated: bool, run_id: str | None
) -> tuple[list[go.Figure], list[str]]:
    """(a frontier figure per search with enough probes, a note per search not drawn)."""
    origin = figure_origin(speed, emulated, run_id)
    candidates = ((result, probe_points(result, speed)) for result in searches(run_dir))
    return TOO_FEW_PROBES.drawn_or_noted(
        (result.scenario, points, partial(frontier_figure, result, points, origin)) for result, points in candidates
    )
