"""Show a collected run in a notebook: the cells of notebooks/report.ipynb call these.

`show_top` is the minute-long read (header, verdict, stage cards, what to do next); the `show_*`
detail functions follow it. Figures use plotly's `notebook` renderer (plotly.js inlined once), so
the exported HTML works offline.
"""

from __future__ import annotations

from typing import Any

from ..accuracy.references import chart as accuracy_chart
from ..speed import reference_frame, server_timeseries
from ..speed.inside import inside_notes
from .cards import diagnosis_card, speed_findings, top
from .collect import RunData
from .figures import caption, concurrency_figure, finding, pareto_figure
from .frontier import operating_points
from .html_parts import STYLE, esc, wrap
from .plan_section import plan_section
from .sections import (
    accuracy_section,
    invoke_section,
    manifest_section,
    speed_section,
    stages_section,
)
from .tables import summary_text
from .turns import turn_figures
from .verdict import accuracy_comparison

_RENDERER = {"wanted": False, "active": False}


def setup_notebook() -> None:
    """Figures through plotly's `notebook` renderer: plotly.js inlined once, works offline. The
    renderer starts with the first figure shown (_show_figure): activating it imports plotly and
    inlines its ~4 MB bundle (1 s, 3 s under load), waste in a run with nothing to draw (a failed
    external deployment must end within 20 s, issue 25 item 7)."""
    _RENDERER["wanted"] = True


def _show_figure(fig: Any) -> None:
    if _RENDERER["wanted"] and not _RENDERER["active"]:
        import plotly.io as pio

        pio.renderers.default = "notebook"
        _RENDERER["active"] = True
    fig.show()


def _show(obj: Any) -> None:
    from IPython.display import display

    display(obj)


def _show_html(body: str) -> None:
    from IPython.display import HTML

    _show(HTML(wrap(body)))


def show_top(data: RunData) -> None:
    """The stylesheet and everything a reviewer reads first (with a failed deployment's diagnosis)."""
    _show_html(STYLE + top(data))


def show_banner(data: RunData) -> None:
    """Only the diagnosis of a failed deployment (nothing otherwise), for notebooks that do not
    show the whole top."""
    body = diagnosis_card(data)
    if body:
        _show_html(STYLE + body)


def show_verdict(data: RunData) -> None:
    """The verdict as plain text (what nbval checks and a terminal shows)."""
    print(summary_text(data))


def show_plan(data: RunData) -> None:
    _show_html(plan_section(data))


def show_manifest(data: RunData) -> None:
    _show_html(manifest_section(data))


def show_invoke(data: RunData) -> None:
    _show_html(invoke_section(data))


def show_speed(data: RunData) -> None:
    _show_html(speed_section(data))
    figures = speed_figures(data)
    for fig in figures:
        _show_figure(fig)
    if figures and data.platform:
        refs = reference_frame(data.platform)
        sources = list(refs["source"]) if "source" in refs.columns else []
        _show_html(f'<p class="note">{esc(caption(sources))}</p>')
    per_turn, not_drawn = turn_figures(data.speed, data.emulated, data.run_id)
    for fig in per_turn:
        fig.show()
    if not_drawn:
        _show_html(f'<p class="note">Per turn: {esc("; ".join(not_drawn))}</p>')
    frontiers, undrawn = operating_points(data.run_dir, data.speed, data.emulated, data.run_id)
    for fig in frontiers:
        _show_figure(fig)
    if undrawn:
        _show_html(f'<p class="note">Operating point: {esc("; ".join(undrawn))}</p>')
    inside = server_timeseries(data.run_dir, data.speed) if data.speed is not None else None
    notes = inside_notes(data.run_dir, data.speed) if data.speed is not None else []
    if notes:
        _show_html(f'<p class="note">Inside the server: {esc("; ".join(notes))}</p>')
    if inside is not None:
        inside.update_layout(height=min(inside.layout.height or 600, 600))
        _show_figure(inside)


def speed_figures(data: RunData) -> list[Any]:
    if data.speed is None or data.speed.empty or not data.platform:
        return []
    refs = reference_frame(data.platform)
    run_name = f"this run ({data.origin})" if data.emulated or data.rehearsal else "this run"
    ref_name = f"reference ({data.platform})"
    title = finding(speed_findings(data))
    return [
        pareto_figure(data.speed, refs, run_name, ref_name, title),
        concurrency_figure(data.speed, refs, run_name, ref_name, title),
    ]


def show_accuracy(data: RunData) -> None:
    _show_html(accuracy_section(data))
    table = accuracy_comparison(data)
    if table is not None and not table.empty and "ref_rate" in table.columns:
        with_reference = table[table["ref_rate"].notna()]
        if not with_reference.empty:
            _show_figure(accuracy_chart(with_reference))


def show_stages(data: RunData) -> None:
    _show_html(stages_section(data))
