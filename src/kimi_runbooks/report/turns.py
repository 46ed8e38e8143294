"""Per-turn figures of a trace scenario (agentic-trace): TTFT against the context each turn carries,
and the prefix-cache hit rate turn by turn.

A row's `turns` come from speed.traces.per_turn (one entry per round of the replay, the round's
median TTFT, mean prompt length and hit rate) and, on an emulated run, have been put on the
latency model's clock with the rest of the row (speed.timescale.rescale). A scenario with fewer
than MIN_TURNS turns holding a TTFT is not drawn: the report says why instead of plotting a curve
of one or two points, and a hit rate no request reported is left out rather than drawn as zero.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .figure_inputs import TooFew, figure_origin, finite_number
from .figures import RUN, styled

MIN_TURNS = 3
"""Turns with a TTFT a scenario needs before its per-turn curve is drawn."""
TOO_FEW_TURNS = TooFew(
    MIN_TURNS,
    "per-turn figure",
    "turn(s) with a TTFT",
    "a curve needs",
    "a trace with more turns, or more conversations, gives one",
)


def _usable(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        t
        for t in turns
        if isinstance(t, dict)
        and finite_number(t.get("median_ttft_ms")) is not None
        and finite_number(t.get("mean_context_tokens"))
    ]


def turn_scenarios(speed: pd.DataFrame | None) -> list[tuple[str, list[dict[str, Any]]]]:
    """(scenario, turns) for every ok row that carries per-turn figures, in the rows' order."""
    if speed is None or speed.empty or "turns" not in speed.columns:
        return []
    out = []
    for rec in speed.to_dict(orient="records"):
        if rec.get("status", "ok") != "ok" or not isinstance(rec.get("turns"), list):
            continue
        out.append((str(rec.get("scenario")), list(rec["turns"])))
    return out


def _title(turns: list[dict[str, Any]]) -> str:
    first, last = turns[0], turns[-1]
    text = (
        f"TTFT {first['median_ttft_ms']:.0f} ms at {first['mean_context_tokens']:.0f} tokens of context (turn "
        f"{first.get('turn')}) to {last['median_ttft_ms']:.0f} ms at {last['mean_context_tokens']:.0f} (turn "
        f"{last.get('turn')})"
    )
    answer = finite_number(last.get("median_first_answer_ms"))
    if answer is not None:
        text += f"; first answer token {answer:.0f} ms at the last turn"
    hits = [finite_number(t.get("cache_hit_rate")) for t in turns]
    if hits[-1] is not None:
        text += f"; cache hit rate {hits[-1]:.0%} at the last turn"
    return text


def turns_figure(scenario: str, turns: list[dict[str, Any]], origin: str) -> go.Figure:
    """TTFT against mean context per turn (left) and cache hit rate per turn (right); `origin` is
    the label every figure carries (EMULATED, or measured with the run id)."""
    usable = _usable(turns)
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("median TTFT and first answer token (ms) against context (tokens)", "cache hit rate per turn"),
    )
    hover = [f"turn {t.get('turn')}: {t.get('requests')} requests" for t in usable]
    fig.add_trace(
        go.Scatter(
            x=[t["mean_context_tokens"] for t in usable],
            y=[t["median_ttft_ms"] for t in usable],
            mode="lines+markers",
            name=f"TTFT, {origin}",
            hovertext=hover,
            line={"color": RUN},
        ),
        row=1,
        col=1,
    )
    answered = [t for t in usable if finite_number(t.get("median_first_answer_ms")) is not None]
    if answered:  # per request under the scenario's load (speed.answer_latency)
        fig.add_trace(
            go.Scatter(
                x=[t["mean_context_tokens"] for t in answered],
                y=[t["median_first_answer_ms"] for t in answered],
                mode="lines+markers",
                name=f"first answer token, {origin}",
                hovertext=[f"turn {t.get('turn')}: {t.get('answered')} answered" for t in answered],
                line={"color": RUN, "dash": "dot"},
            ),
            row=1,
            col=1,
        )
    hits = [(t.get("turn"), finite_number(t.get("cache_hit_rate"))) for t in usable]
    shown = [(k, h) for k, h in hits if h is not None]
    if shown:
        fig.add_trace(
            go.Scatter(
                x=[k for k, _ in shown],
                y=[h for _, h in shown],
                mode="lines+markers",
                name=f"cache hit rate, {origin}",
                line={"color": RUN, "dash": "dash"},
            ),
            row=1,
            col=2,
        )
        fig.update_yaxes(range=[0, 1], tickformat=".0%", row=1, col=2)
    else:
        fig.add_annotation(
            text="no per-turn cached_tokens (none reported, or read through a router): hit rate not drawn",
            xref="x2 domain",
            yref="y2 domain",
            x=0.5,
            y=0.5,
            showarrow=False,
        )
    fig.update_xaxes(title_text="mean context (prompt tokens)", row=1, col=1)
    fig.update_xaxes(title_text="turn", row=1, col=2)
    return styled(fig, _title(usable), f"{scenario}, per turn of the trace replay: {origin}")


def turn_figures(speed: pd.DataFrame | None, emulated: bool, run_id: str | None) -> tuple[list[go.Figure], list[str]]:
    """A figure per scenario with enough turns, and a note per scenario without (why not drawn)."""
    origin = figure_origin(speed, emulated, run_id)
    return TOO_FEW_TURNS.drawn_or_noted(
        (scenario, _usable(turns), partial(turns_figure, scenario, turns, origin))
        for scenario, turns in turn_scenarios(speed)
    )
