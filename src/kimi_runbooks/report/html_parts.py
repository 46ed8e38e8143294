"""Small HTML building blocks of the report: one stylesheet, cards, badges, typed tables.

Tables are typed by column: text is left-aligned, numbers right-aligned with a precision that fits
their unit, missing values show as an en dash (never `<NA>` or `None`), and anything that is not a
scalar (settings, transcripts, long errors) goes into a collapsible `<details>`, never a cell.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

STYLE = """
<style>
.kr{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d2330;font-size:14px;line-height:1.45}
.kr h2{font-size:18px;margin:18px 0 8px}
.kr .cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(250px,1fr));gap:10px;margin:8px 0}
.kr .card{border:1px solid #d6dae3;border-radius:8px;padding:10px 12px;background:#fff}
.kr .card h3{margin:0 0 6px;font-size:14px;text-transform:uppercase;letter-spacing:.04em;color:#4a5366}
.kr .head{display:flex;flex-wrap:wrap;align-items:center;gap:8px 18px;border:1px solid #d6dae3;
  border-radius:8px;padding:10px 14px;background:#f6f8fb}
.kr .head .title{font-size:20px;font-weight:600}
.kr .facts{display:flex;flex-wrap:wrap;gap:4px 16px;color:#4a5366}
.kr .facts b{color:#1d2330;font-weight:600}
.kr .badge{display:inline-block;border-radius:999px;padding:2px 10px;font-weight:700;color:#fff;font-size:13px}
.kr .verdict{display:flex;align-items:center;gap:12px;margin:10px 0;font-size:15px}
.kr .verdict .badge{font-size:18px;padding:4px 16px}
.kr .diagnosis{border:2px solid #b00020;padding:10px;margin:10px 0}
.kr .emu{background:#b36b00}
.kr .ok{color:#1b7a1b}.kr .bad{color:#b00020}.kr .meh{color:#6b7280}
.kr table.t{border-collapse:collapse;margin:4px 0 10px;font-size:13px}
.kr table.t th{background:#eef1f6;font-weight:600;padding:3px 8px;border-bottom:1px solid #c9cfda;vertical-align:bottom}
.kr table.t td{padding:3px 8px;border-bottom:1px solid #eceff4;vertical-align:top}
.kr table.t td.l,.kr table.t th.l,.kr .l{text-align:left}
.kr table.t td.r,.kr table.t th.r,.kr .r{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.kr ul{margin:4px 0 4px 18px;padding:0}.kr li{margin:2px 0}
.kr details{margin:2px 0}.kr summary{cursor:pointer;color:#33507a}
.kr pre{white-space:pre-wrap;word-break:break-all;background:#f6f8fb;padding:6px 8px;border-radius:6px;font-size:12px}
.kr .note{color:#4a5366;font-size:12px}
@media print{.kr .card,.kr .head{break-inside:avoid}.kr details{display:none}}
</style>
"""
"""The report's only stylesheet (inline, so the HTML stays self-contained and prints readably)."""

COLOURS = {"PASS": "#1b7a1b", "WARN": "#b36b00", "FAIL": "#b00020", "INCOMPLETE": "#6a4c93", "INVALID": "#b00020"}
DASH = "–"


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def missing(value: Any) -> bool:
    """None, NaN, pandas NA/NaT: shown as a dash."""
    if value is None:
        return True
    if isinstance(value, (list, tuple, dict)):
        return False
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def badge(text: str, colour: str) -> str:
    return f'<span class="badge" style="background:{colour}">{esc(text)}</span>'


def card(title: str, body: str) -> str:
    return f'<div class="card"><h3>{esc(title)}</h3>{body}</div>'


def cards(items: Iterable[str]) -> str:
    return '<div class="cards">' + "".join(items) + "</div>"


def details(summary: str, body_html: str) -> str:
    return f"<details><summary>{esc(summary)}</summary>{body_html}</details>"


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def bullet_list(items: Iterable[str], *, escape: bool = True) -> str:
    rows = [f"<li>{esc(i) if escape else i}</li>" for i in items]
    return "<ul>" + "".join(rows) + "</ul>" if rows else ""


def wrap(body: str) -> str:
    """A report fragment inside the .kr scope the stylesheet applies to."""
    return f'<div class="kr">{body}</div>'


# --------------------------------------------------------------------------- numbers


def fmt_number(value: Any, digits: int | None = None) -> str:
    """Sensible precision: 3 significant digits under 100, whole numbers above, thousands separated."""
    if missing(value):
        return DASH
    try:
        v = float(value)
    except (TypeError, ValueError):
        return esc(value)
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if digits is not None:
        return f"{v:,.{digits}f}"
    if v != 0 and abs(v) < 0.01:
        return f"{v:.2g}"
    if abs(v) < 100:
        return f"{v:,.3g}" if abs(v) >= 1 else f"{v:.2f}"
    return f"{v:,.0f}"


def fmt_percent(value: Any, signed: bool = False) -> str:
    if missing(value):
        return DASH
    v = float(value) * 100
    return f"{v:+.1f}%" if signed else f"{v:.1f}%"


@dataclass(frozen=True)
class Column:
    """One table column: the row key, its header (with unit), and how a value becomes a cell."""

    key: str
    header: str
    kind: str = "text"  # text | num | pct | int | raw (pre-built HTML)
    digits: int | None = None
    render: Callable[[Any, Mapping[str, Any]], str] | None = None

    def cell(self, row: Mapping[str, Any]) -> str:
        value = row.get(self.key)
        if self.render is not None:
            return f'<td class="{"l" if self.kind in ("text", "raw") else "r"}">{self.render(value, row)}</td>'
        if self.kind == "num":
            return f'<td class="r">{fmt_number(value, self.digits)}</td>'
        if self.kind == "int":
            return f'<td class="r">{_int_text(value)}</td>'
        if self.kind == "pct":
            return f'<td class="r">{fmt_percent(value)}</td>'
        return f'<td class="l">{text_cell(value)}</td>'

    @property
    def align(self) -> str:
        return "l" if self.kind in ("text", "raw") else "r"


def _int_text(value: Any) -> str:
    if missing(value):
        return DASH
    try:
        return f"{int(float(value)):,}"
    except (TypeError, ValueError):
        return esc(value)


def text_cell(value: Any, limit: int = 160) -> str:
    """A short scalar as text; anything structured or long goes into a collapsible block."""
    if missing(value):
        return DASH
    if isinstance(value, (dict, list, tuple)):
        return details("show", pre(json.dumps(value, indent=2, default=str)))
    text = str(value)
    if len(text) > limit or "\n" in text:
        head = text.strip().splitlines()[0][:limit] if text.strip() else ""
        return details(head + " …", pre(text))
    return esc(text)


def table(columns: Sequence[Column], rows: Iterable[Mapping[str, Any]], empty: str = "nothing to show") -> str:
    body = ["<tr>" + "".join(c.cell(r) for c in columns) + "</tr>" for r in rows]
    if not body:
        return f'<p class="note">{esc(empty)}</p>'
    head = "<tr>" + "".join(f'<th class="{c.align}">{esc(c.header)}</th>' for c in columns) + "</tr>"
    return f'<table class="t"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'
