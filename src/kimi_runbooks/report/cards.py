"""The top of the report: header card, verdict badge, one summary card per stage, what to do next.

A reviewer reads this part in a minute; the detail sections below it are for digging in.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..accuracy.judgement import Judgement
from ..accuracy.references import SOURCE_EMULATED
from ..accuracy.sample_counts import n_counts
from ..catalog import load_catalog
from ..deploy.diagnose import run_diagnosis
from ..origin import REHEARSAL_LABEL
from . import causes
from .collect import RunData
from .diagnoses import diagnoses
from .html_parts import COLOURS, DASH, badge, bullet_list, card, cards, esc, fmt_number, fmt_percent, missing, pre
from .next_steps import next_steps
from .verdict import accuracy_comparison, accuracy_judgements, verdict

SPEED_TOLERANCE = 0.10
"""Beyond this relative difference from a reference a speed number is coloured better or worse."""
HEADLINE_METRICS = (("output_throughput", "output tok/s", "higher"), ("median_tpot_ms", "median TPOT", "lower"))


def _platform_name(platform_id: str | None) -> str:
    if not platform_id:
        return "unknown platform"
    try:
        return load_catalog().platform(platform_id).name
    except ValueError:
        return platform_id


def sglang_version(data: RunData) -> str:
    version = (data.manifest or {}).get("sglang_version")
    if version:
        return str(version)
    if data.external:
        return "unknown (external server)"  # the plan's version says nothing about a server we did not start
    planned = ((data.plan or {}).get("config") or {}).get("sglang_version")
    return f"{planned} (planned)" if planned else DASH


def header_card(data: RunData) -> str:
    launcher = (data.handle or {}).get("launcher") or data.params.get("launcher") or DASH
    started = (data.manifest or {}).get("started_at") or data.params.get("started_at") or DASH
    facts = [
        ("model", data.model or DASH),
        ("SGLang", sglang_version(data)),
        ("launcher", launcher),
        ("run", data.run_id),
        ("date", str(started).replace("T", " ")[:19]),
    ]
    fact_html = "".join(f"<span>{esc(k)} <b>{esc(v)}</b></span>" for k, v in facts)
    emulated = (
        badge("EMULATED", COLOURS["WARN"])
        + ' <span class="note">CPU emulator, no model: numbers rehearse the runbook, not the hardware</span>'
        if data.emulated
        else ""
    )
    if data.rehearsal:
        emulated = (
            badge(REHEARSAL_LABEL, COLOURS["WARN"])
            + ' <span class="note">SGLang itself on this CPU, serving a tiny random-weight checkpoint: real server '
            "behaviour, no hardware and no real model</span>"
        )
    name = _platform_name(data.platform)
    if data.external:
        name = f"External server ({name} parameters)"
    title = f'<span class="title">{esc(name)}</span>'
    return f'<div class="head">{title}<div class="facts">{fact_html}</div>{emulated}</div>'


def verdict_line(data: RunData) -> str:
    """The verdict and what leads it: the diagnosed cause (diagnoses.py), else the first reason."""
    v = verdict(data)
    more = ""
    if v.diagnosed or not v.reasons:
        reason = v.headline  # a diagnosed headline names the cause and the count; the steps follow
    elif len(v.reasons) == 1:
        reason = v.reasons[0]
    else:
        reason = f"{v.headline}: {v.reasons[0]}"
        more = f' <span class="note">(+{len(v.reasons) - 1} more below)</span>'
    return (
        f'<div class="verdict">{badge(v.level, COLOURS.get(v.level, "#333"))}'
        f"<span>{esc(reason[:300])}{more}</span></div>"
    )


# --------------------------------------------------------------------------- stage cards


def _status_line(data: RunData, stage: str) -> str:
    state = data.stages.get(stage)
    if state is None:
        return ""
    cls = "ok" if state.status == "ok" else "bad" if state.status == "failed" else "meh"
    took = f" in {state.duration_s:.0f} s" if state.duration_s else ""
    return f'<p class="{cls}">{esc(state.status)}{esc(took)}</p>'


def deploy_card(data: RunData) -> str:
    handle, manifest = data.handle or {}, data.manifest or {}
    rows = [
        ("server", handle.get("base_url")),
        ("served model", handle.get("model")),
        ("KV pool (tokens)", fmt_number(manifest.get("max_total_num_tokens"))),
        ("devices", None if data.external else (data.plan or {}).get("devices_used")),  # external: unknown
    ]
    body = "".join(f"<div>{esc(k)}: <b>{esc(v if not missing(v) else DASH)}</b></div>" for k, v in rows if v)
    return card("Deploy", _status_line(data, "deploy") + body)


def invoke_card(data: RunData) -> str:
    if data.invoke is None:
        return card("Invoke", _status_line(data, "invoke") or '<p class="meh">not run</p>')
    counts = {k: sum(r.status == k for r in data.invoke) for k in ("pass", "fail", "skip")}
    summary = (
        f'<p><b class="ok">{counts["pass"]} passed</b> · <b class="{"bad" if counts["fail"] else "meh"}">'
        f'{counts["fail"]} failed</b> · <span class="meh">{counts["skip"]} skipped</span></p>'
    )
    found = causes.diagnosis(data.invoke)
    lead = f'<p class="bad"><b>{esc(found)}.</b> Fix: {esc(causes.NOT_KIMI_FIX)}</p>' if found else ""
    gone = next((d for d in diagnoses(data) if d.kind == "server gone"), None)
    dead = {name for stage, name in gone.covers if stage == "invoke"} if gone else set()
    if dead:  # the checks sent after the server died say only that: one line, before the rest
        lead = f'<p class="bad"><b>{esc(gone.short if gone else "")}.</b></p>' + lead
    failed = [
        f"<b>{esc(g.cause)}</b>"
        + (f" ({len(g.names)} checks: {esc(', '.join(g.names[:6]))})" if len(g.names) > 1 else "")
        + f": {esc(g.example[:140])}"
        for g in causes.groups([r for r in data.invoke if r.name not in dead])
    ]
    return card("Invoke", summary + lead + bullet_list(failed, escape=False))


def speed_findings(data: RunData, tolerance: float = SPEED_TOLERANCE) -> list[dict[str, Any]]:
    """Per scenario with a reference: the signed difference of each headline metric, and its class."""
    from .verdict import speed_comparison

    comparison = speed_comparison(data, tolerance=tolerance)
    if comparison.empty:
        return []
    out = []
    for scenario, group in comparison.groupby("scenario", sort=False):
        first_ref = group["reference_id"].iloc[0]
        group = group[group["reference_id"] == first_ref]
        row: dict[str, Any] = {
            "scenario": scenario,
            "reference": first_ref,
            "source": group["reference_source"].iloc[0],
        }
        for metric, label, better in HEADLINE_METRICS:
            hit = group[group["metric"] == metric]
            if hit.empty:
                continue
            delta = float(hit["ratio"].iloc[0]) - 1.0
            good = delta >= -tolerance if better == "higher" else delta <= tolerance
            clear = abs(delta) > tolerance
            row[label] = {"delta": delta, "class": ("ok" if good else "bad") if clear else "meh"}
        out.append(row)
    return out


def speed_card(data: RunData) -> str:
    if data.speed is None:
        return card("Speed", _status_line(data, "speed") or '<p class="meh">not run</p>')
    status = data.speed["status"].value_counts().to_dict() if "status" in data.speed.columns else {}
    parts = [f"{n} {s}" for s, n in status.items()]
    body = f"<p>{esc(' · '.join(parts) or 'no scenario')}</p>"
    findings = speed_findings(data)
    if findings:
        items = []
        for f in findings:
            cells = [
                f'{esc(label)} <b class="{f[label]["class"]}">{fmt_percent(f[label]["delta"], signed=True)}</b>'
                for _, label, _ in HEADLINE_METRICS
                if label in f
            ]
            items.append(f"<b>{esc(f['scenario'])}</b>: " + ", ".join(cells))
        body += '<p class="note">vs published reference (signed: this run / reference − 1)</p>'
        body += bullet_list(items, escape=False)
    else:
        body += '<p class="note">no published reference covers these scenarios on this platform</p>'
    failed = [
        f"<b>{esc(causes.named(g, 'scenario'))}</b> failed: {esc(g.example[:200])}"
        for g in causes.speed_failures(data.speed)
    ]
    if failed:
        body += '<p class="bad">failed, by cause:</p>' + bullet_list(failed, escape=False)
    skipped = [  # a server without SGLang's native API is said here once, not per scenario
        f"<b>{esc(causes.named(g, 'scenario'))}</b>: {esc(causes.without_fix(g.example)[:200])}"
        for g in causes.speed_failures(data.speed, "skipped")
    ]
    if skipped:
        body += '<p class="meh">skipped, by cause:</p>' + bullet_list(skipped, escape=False)
    if _rescaled(data):
        body += f'<p class="note">emulated at time scale {_time_scale(data):g}; shown rescaled to time scale 1</p>'
    return card("Speed", body)


def _rescaled(data: RunData) -> bool:
    return data.speed is not None and "rescaled" in data.speed.columns and bool(data.speed["rescaled"].any())


def _time_scale(data: RunData) -> float:
    if data.speed is not None and "time_scale" in data.speed.columns and len(data.speed):
        return float(data.speed["time_scale"].iloc[0])
    return 1.0


def accuracy_card(data: RunData) -> str:
    """Per suite, its primary metric (pass@1, accuracy, tool-call F1 / schema accuracy) first, judged
    against the published figure (accuracy.judgement): an emulated run reads "not comparable"."""
    if data.accuracy is None:
        return card("Accuracy", _status_line(data, "accuracy") or '<p class="meh">not run</p>')
    table = accuracy_comparison(data)
    judged = {(j.suite, j.metric): j for j in accuracy_judgements(data)}
    items = []
    if table is not None and not table.empty:
        for suite, group in table.groupby("suite", sort=False):
            heads = group[[(str(suite), str(m)) in judged for m in group["metric"]]]
            with_ref = group[group["ref_rate"].notna()] if "ref_rate" in group.columns else group.iloc[0:0]
            shown = heads if len(heads) else (with_ref if len(with_ref) else group).iloc[:1]
            items.append(
                "; ".join(
                    _accuracy_item(row, judged.get((str(suite), str(row["metric"]))), _why_n(group, row))
                    for _, row in shown.drop_duplicates("metric", keep="last").iterrows()
                )
            )
    for g in causes.accuracy_failures(data.accuracy):  # one line per cause, not one per suite
        items.append(
            f'<b>{esc(causes.named(g, "suite"))}</b>: <span class="bad">errored</span>: {esc(g.example[:200])}'
        )
    errored = {n for g in causes.accuracy_failures(data.accuracy) for n in g.names}
    for r in data.accuracy:
        if r.get("status") not in ("ok", "error") and str(r.get("suite")) not in errored:
            items.append(f'<b>{esc(r.get("suite"))}</b>: <span class="meh">{esc(r.get("status"))}</span>')
    return card("Accuracy", _status_line(data, "accuracy") + bullet_list(items[:8], escape=False))


JUDGED_CLASS = {"within": "ok", "below": "bad", "fail": "bad"}


def _why_n(group: pd.DataFrame, row: pd.Series) -> str:
    """For a metric over the tool calls made: how many requests made one (and the published rate), since
    a schema accuracy on the 1 call of 16 requests says little about a model that rarely calls a tool."""
    if n_counts(str(row["metric"])) != "tool calls made":
        return ""
    calls = group[group["metric"] == "tool_calls_triggered"]
    if calls.empty or missing(calls["value"].iloc[0]) or missing(calls["n"].iloc[0]):
        return ""
    made, total, ref = int(calls["value"].iloc[0]), int(calls["n"].iloc[0]), calls["ref_rate"].iloc[0]
    published = "" if missing(ref) else f"; published rate {fmt_number(ref, 3)}"
    return f"the model called a tool in {made} of {total} requests{published}"


def _accuracy_item(row: pd.Series, judged: Judgement | None = None, why_n: str = "") -> str:
    rate = row.get("rate")
    interval = (
        f" [{fmt_number(row['ci_low'], 2)}, {fmt_number(row['ci_high'], 2)}]"
        if not missing(row.get("ci_low")) and not missing(row.get("ci_high"))
        else ""
    )
    text = f"<b>{esc(row['suite'])}</b> {esc(row['metric'])} {fmt_number(rate, 3)}{interval}"
    if "n" in row and not missing(row.get("n")):  # with what n counts: 1 tool call is not 16 requests
        text += f" on n={int(row['n'])} {esc(n_counts(str(row['metric'])))}"
        text += f" ({esc(why_n)})" if why_n else ""
    ref = row.get("ref_rate")
    if missing(ref):
        return text + ' <span class="meh">(no published figure)</span>'
    if judged is None or judged.status not in JUDGED_CLASS:
        reason = judged.status if judged is not None else ("not comparable: emulated" if data_emulated(row) else "")
        return (
            text
            + f" vs published {fmt_number(ref, 3)}"
            + (f' <span class="meh">({esc(reason)})</span>' if reason else "")
        )
    cls = JUDGED_CLASS[judged.status]
    word = {"within": "consistent", "below": "below its interval", "fail": "below past fail_drop"}[judged.status]
    return text + f' vs published <b class="{cls}">{fmt_number(ref, 3)}</b> <span class="{cls}">({word})</span>'


def data_emulated(row: pd.Series) -> bool:
    return bool(row.get("source") == SOURCE_EMULATED)


def stage_cards(data: RunData) -> str:
    return cards([deploy_card(data), invoke_card(data), speed_card(data), accuracy_card(data)])


def next_steps_html(data: RunData) -> str:
    steps = next_steps(data)
    if not steps:
        return '<p class="ok">Nothing to do: every requested stage ran and every check passed.</p>'
    items = [f"<b>{esc(s.what)}</b> — {esc(s.fix)}" for s in steps]
    return bullet_list(items, escape=False)


def top(data: RunData) -> str:
    """Everything above the detail sections, in reading order."""
    return (
        header_card(data)
        + verdict_line(data)
        + diagnosis_card(data)
        + stage_cards(data)
        + "<h2>What to do next</h2>"
        + next_steps_html(data)
    )


def diagnosis_card(data: RunData) -> str:
    """For a failed deployment: the cause read from its server log(s), the fix, public sources and
    the redacted log excerpt (deploy.diagnose). Empty when the deployment did not fail."""
    deploy = data.stages.get("deploy")
    if data.external:
        return ""  # no server was started here, so there is no server log to read: the stage names the cause
    found = run_diagnosis(data.run_dir, deploy.status if deploy else None)
    if not found:
        return ""
    links = ", ".join(f'<a href="{esc(s["url"])}">{esc(s["label"])}</a>' for s in found["sources"])
    return (
        '<div class="diagnosis"><b>The deployment failed.</b> '
        f"{esc(found['sentence'])}<br><b>Fix:</b> {esc(found['fix'])}"
        + (f"<br>Source: {links}" if links else "")
        + pre(found["excerpt"])
        + "</div>"
    )


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
