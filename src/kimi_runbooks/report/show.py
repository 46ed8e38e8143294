"""Show a collected run in a notebook: the cells of notebooks/report.ipynb call these."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from ..speed import compare_wide
from .collect import RunData
from .tables import (
    accuracy_figures,
    accuracy_table,
    external_table,
    invoke_counts,
    invoke_table,
    latency_table,
    manifest_table,
    memory_table,
    plan_table,
    reference_table,
    speed_figures,
    speed_table,
    stages_table,
    summary_text,
)
from .verdict import accuracy_comparison, speed_comparison, verdict, warnings


def setup_notebook() -> None:
    """Figures through plotly's `notebook` renderer: plotly.js inlined once, works offline."""
    import plotly.io as pio

    pio.renderers.default = "notebook"


def _html(text: str) -> Any:
    from IPython.display import HTML

    return HTML(text)


def _show(obj: Any) -> None:
    from IPython.display import display

    display(obj)


def _frame_html(df: pd.DataFrame | None, empty: str) -> str:
    if df is None or df.empty:
        return f"<p><em>{html.escape(empty)}</em></p>"
    return df.to_html(
        index=not isinstance(df.index, pd.RangeIndex),
        na_rep="-",
        float_format=_fmt_num,
        escape=True,
        border=0,
        classes="kr-table",
    )


def _fmt_num(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.4g}"


_COLORS = {"PASS": "#1b7a1b", "WARN": "#b36b00", "FAIL": "#b00020", "INCOMPLETE": "#6a4c93", "INVALID": "#b00020"}


def show_banner(data: RunData) -> None:
    if data.emulated:
        _show(
            _html(
                '<div style="background:#ffe08a;border:2px solid #b36b00;padding:10px;font-weight:bold">'
                "EMULATED: this run used the project's SGLang emulator (CPU, no model). Every speed and "
                "latency figure is the emulator's latency model, not a hardware measurement.</div>"
            )
        )


def show_verdict(data: RunData) -> None:
    v = verdict(data)
    items = "".join(f"<li>{html.escape(r)}</li>" for r in v.reasons)
    _show(
        _html(
            f'<h2 style="color:{_COLORS.get(v.level, "#000")}">Verdict: {v.level}</h2>'
            f"<p>{html.escape(v.headline)}</p>" + (f"<ul>{items}</ul>" if items else "")
        )
    )
    print(summary_text(data))


def show_plan(data: RunData) -> None:
    if data.external:
        _show(
            _html(
                "<h3>External server (attached, not launched by this run)</h3>" + _frame_html(external_table(data), "")
            )
        )
        return
    if not data.plan:
        _show(_html("<p><em>No plan recorded in this run folder (plan.json / manifest plan).</em></p>"))
        return
    title = f"{data.platform} / {data.model}"
    _show(
        _html(
            f"<h3>{html.escape(title)}</h3><p>Launch command (secrets redacted):</p>"
            f"<pre>{html.escape(str(data.plan.get('command')))}</pre>"
            + (
                f"<p>docker form:</p><pre>{html.escape(str(data.plan['docker']))}</pre>"
                if data.plan.get("docker")
                else ""
            )
        )
    )
    _show(_html("<h4>Knobs</h4>" + _frame_html(plan_table(data), "no knobs recorded")))
    _show(_html("<h4>Memory and KV cache per device</h4>" + _frame_html(memory_table(data), "no memory plan")))


def show_manifest(data: RunData) -> None:
    if data.manifest is None:
        _show(_html("<p><em>No manifest.json: the deploy stage did not run (or did not finish).</em></p>"))
        return
    _show(_html(_frame_html(manifest_table(data), "empty manifest")))


def _not_run(data: RunData, stage: str) -> str:
    s = data.stages[stage]
    return f"The {stage} stage is {s.status}: {s.detail}"


def show_invoke(data: RunData) -> None:
    table = invoke_table(data)
    if table is None:
        _show(_html(f"<p><em>{html.escape(_not_run(data, 'invoke'))}</em></p>"))
        return
    c = invoke_counts(data) or {}
    print(f"invoke checks: {c.get('pass', 0)} passed, {c.get('fail', 0)} failed, {c.get('skip', 0)} skipped")
    _show(_html(_frame_html(table, "no checks")))


def show_speed(data: RunData) -> None:
    table = speed_table(data)
    if table is None:
        _show(_html(f"<p><em>{html.escape(_not_run(data, 'speed'))}</em></p>"))
        return
    _show(_html("<h4>Scenarios (this run)</h4>" + _frame_html(table, "no scenarios")))
    _show(
        _html("<h4>Latency, median and p99 (this run)</h4>" + _frame_html(latency_table(data), "no finished scenario"))
    )
    comparison = speed_comparison(data)
    if comparison.empty:
        _show(
            _html(
                "<p><em>No published reference covers these scenarios on this platform; the "
                "references are listed below for context only.</em></p>"
            )
        )
    else:
        _show(
            _html(
                "<h4>Against published references (ratio = run / reference)</h4>"
                + _frame_html(compare_wide(comparison), "")
            )
        )
    _show(
        _html(
            "<h4>Published references for this platform</h4>"
            + _frame_html(reference_table(data), "no published speed reference for this platform")
        )
    )
    for fig in speed_figures(data):
        fig.show()


def show_accuracy(data: RunData) -> None:
    table = accuracy_table(data)
    if table is None:
        _show(_html(f"<p><em>{html.escape(_not_run(data, 'accuracy'))}</em></p>"))
        return
    _show(_html("<h4>Results (this run)</h4>" + _frame_html(table, "no rows")))
    comparison = accuracy_comparison(data)
    if comparison is not None:
        _show(_html("<h4>Against published references</h4>" + _frame_html(comparison, "no reference rows")))
    for fig in accuracy_figures(data):
        fig.show()


def show_warnings(data: RunData) -> None:
    items = warnings(data)
    if not items:
        _show(_html("<p>No warnings.</p>"))
        return
    rows = "".join(f"<tr><td>{html.escape(w.kind)}</td><td>{html.escape(w.text)}</td></tr>" for w in items)
    _show(_html(f'<table class="kr-table"><tr><th>kind</th><th>warning</th></tr>{rows}</table>'))


def show_stages(data: RunData) -> None:
    _show(_html(_frame_html(stages_table(data), "no stages")))
