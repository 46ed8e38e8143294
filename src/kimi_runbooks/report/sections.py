"""The report's detail sections as compact, typed HTML tables (units in the headers)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..accuracy.judgement import primary
from ..accuracy.references import SOURCE_EMULATED
from ..accuracy.sample_counts import n_counts
from ..perfmodel.beside_measured import EMULATED_NOTE, PREDICTION_SOURCE
from ..speed.inside import sweep_goodput
from ..speed.saturation import concurrency_label
from .causes import cause_key
from .collect import RunData
from .frontier import operating_point_lines
from .html_parts import DASH, Column, details, esc, fmt_number, fmt_percent, missing, pre, table, text_cell
from .intervals import NOTE as REPEATS_NOTE
from .intervals import repeated, with_intervals
from .tables import stages_table
from .verdict import accuracy_comparison, accuracy_judgements

INVOKE_COLUMNS = [
    Column("check", "check"),
    Column("status", "status", render=lambda v, r: _status(v)),
    Column("reason", "reason"),
    Column("latency_ms", "latency (ms)", "num", 0),
    Column("ttft_ms", "TTFT (ms)", "num", 0),
    Column("prompt_tokens", "prompt tok", "int"),
    Column("completion_tokens", "completion tok", "int"),
    Column("exchange", "exchange", "raw", render=lambda v, r: v or DASH),
]

SPEED_COLUMNS = [
    Column("scenario", "scenario"),
    Column("status", "status", render=lambda v, r: _status(v)),
    Column(
        "max_concurrency",
        "concurrency (effective)",
        render=lambda v, r: esc(concurrency_label(v, r.get("effective_concurrency"), r.get("emulator_behind"))),
    ),
    Column("completed", "done", "int"),
    Column("prompts", "prompts (fresh / shared-prefix)", render=lambda v, r: _prompts_cell(v, r)),
    Column("output_throughput", "output tok/s", "num"),
    Column("output_tok_s_per_gpu", "tok/s/device", "num"),
    Column("tok_s_per_user", "tok/s/user", "num"),
    Column("median_ttft_ms", "TTFT p50 (ms)", "num"),
    Column("p99_ttft_ms", "TTFT p99 (ms)", "num"),
    Column("median_first_reasoning_ms", "first reasoning token p50 (ms)", "num"),
    Column("median_first_answer_ms", "first answer token p50 (ms)", "num"),
    Column("p90_first_answer_ms", "first answer token p90 (ms)", "num"),
    Column("p99_first_answer_ms", "first answer token p99 (ms)", "num"),
    Column("first_answer_from", "first answer token from"),
    Column("median_e2e_latency_ms", "end-to-end p50 (ms)", "num"),
    Column("p99_e2e_latency_ms", "end-to-end p99 (ms)", "num"),
    Column("median_tpot_ms", "TPOT p50 (ms)", "num"),
    Column("p99_tpot_ms", "TPOT p99 (ms)", "num"),
    Column("cache_hit_rate", "prefix cache hit rate", "pct", render=lambda v, r: _hit_rate(v, r)),
    Column("requests_per_server", "requests per server (behind the router)"),
    Column("goodput_tok_s", "goodput tok/s (SLO)", "num"),
    Column("joules_per_output_token", "J/token", "num"),
    Column("usd_per_million_output_tokens", "$/M tokens", "num"),
    Column("saturation_reasons", "saturated because"),
    Column("not_representative", "not representative because"),
    Column("error", "error"),
]

ACCURACY_COLUMNS = [
    Column("suite", "suite"),
    Column("metric", "metric"),
    Column("rate", "value", "num", 3),
    Column("n", "n (what it counts)", render=lambda v, r: _n_cell(v, r)),
    Column("interval", "95% interval", "raw", render=lambda v, r: v or DASH),
    Column("ref_rate", "published", "num", 3),
    Column("delta", "Δ", "num", 3),
    Column("judged", "vs published"),
    Column("source", "source"),
    Column("settings", "settings", "raw", render=lambda v, r: v or DASH),
]


def _prompts_cell(value: Any, row: Any) -> str:
    """fresh / shared-prefix, with why (seed, flush) on hover (speed/freshness.py)."""
    if missing(value):
        return DASH
    return f'<span title="{esc(row.get("prompts_note") or "")}">{esc(value)}</span>'


def _n_cell(value: Any, row: Any) -> str:
    """`16 requests`, `1 tool calls made`: a rate on one tool call reads as what it is."""
    if missing(value):
        return DASH
    return f"{int(value)} {esc(n_counts(str(row.get('metric')).removesuffix(' (primary)')))}"


def _primary_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each suite's rows with the metrics that carry its verdict first (marked), the rest after."""
    for rec in rows:
        rec["primary"] = primary(str(rec.get("ref_suite") or rec.get("suite")), str(rec.get("metric"))) or primary(
            str(rec.get("suite")), str(rec.get("metric"))
        )
        if rec["primary"]:
            rec["metric"] = f"{rec['metric']} (primary)"
    order = {suite: i for i, suite in enumerate(dict.fromkeys(str(r.get("suite")) for r in rows))}
    return sorted(rows, key=lambda r: (order[str(r.get("suite"))], not r["primary"]))


def _hit_rate(value: Any, row: Any) -> str:
    """The hit rate, and where it was read when that was not the client (behind a router: the servers')."""
    if missing(value):
        return DASH
    where = " (servers' /metrics)" if not missing(row.get("cache_hit_rate_source")) else ""
    return esc(fmt_percent(value) + where)


def _status(value: Any) -> str:
    text = str(value or DASH).lower()
    cls = "ok" if text in ("pass", "ok") else "bad" if text in ("fail", "failed", "error") else "meh"
    return f'<b class="{cls}">{esc(text)}</b>'


def invoke_section(data: RunData) -> str:
    if data.invoke is None:
        return '<p class="note">The invoke stage left no results.</p>'
    rows = []
    for r in data.invoke:
        last = r.transcript[-1] if r.transcript else None
        exchange = details("request / response", pre(json.dumps(last, indent=2, default=str)[:6000])) if last else ""
        rows.append(
            {
                "check": r.name,
                "status": r.status,
                "reason": r.reason,
                "latency_ms": r.latency_ms,
                "ttft_ms": r.ttft_ms,
                "prompt_tokens": r.prompt_tokens,
                "completion_tokens": r.completion_tokens,
                "exchange": exchange,
            }
        )
    label = data.origin
    return f'<p class="note">timings: {esc(label)}</p>' + table(INVOKE_COLUMNS, rows) + agentic_section(data)


AGENTIC_COLUMNS = [
    Column("case", "case"),
    Column("verdict", "verdict", render=lambda v, r: _status(v)),
    Column("expected", "expected (SGLang, kimi_k2 parsers)"),
    Column("reason", "reason"),
]


def agentic_section(data: RunData) -> str:
    """The agentic tool-calling suite's card: counts, then one row per case with what was expected."""
    if not any(getattr(r, "suite", "") == "agentic" for r in data.invoke or []):
        return ""  # nothing to show; and no import of the suite (it brings the openai client, ~0.5 s)
    from ..invoke.agentic import agentic_card

    card = agentic_card(data.invoke)
    if card is None:
        return ""
    head = f"{card['title']} ({card['source']}): {card['passed']} of {card['cases']} cases passed"
    return f"<h3>{esc(head)}</h3>" + table(AGENTIC_COLUMNS, card["rows"])


def _predicted_cell(metric: str) -> Column:
    def render(value: Any, row: Any) -> str:
        if missing(value):
            return DASH
        band = f"{fmt_number(row.get(f'predicted_{metric}_low'))}–{fmt_number(row.get(f'predicted_{metric}_high'))}"
        flag = metric in str(row.get("outside_band") or "").split(", ")
        mark = ' <b class="bad">outside</b>' if flag else ""
        return f'{fmt_number(value)} <span class="note">({band})</span>{mark}'

    return Column(f"predicted_{metric}", "predicted (band)", "num", render=render)


def _outside(value: Any, row: Any) -> str:
    if value:
        return f'<b class="bad">{esc(value)}</b>'
    return "no" if not missing(row.get("predicted_median_tpot_ms")) else DASH


PREDICTED_COLUMNS = [
    Column("scenario", "scenario"),
    Column("median_ttft_ms", "TTFT p50 measured (ms)", "num"),
    _predicted_cell("median_ttft_ms"),
    Column("median_tpot_ms", "TPOT p50 measured (ms)", "num"),
    _predicted_cell("median_tpot_ms"),
    Column("output_throughput", "output tok/s measured", "num"),
    _predicted_cell("output_throughput"),
    Column("outside_band", "outside the prediction band", render=lambda v, r: _outside(v, r)),
    Column("bound", "what bounds the prediction (shares of the model's terms)"),
    Column("prediction", "prediction"),
]


def predicted_section(data: RunData) -> str:
    """Measured beside predicted, per ok scenario, with the band and the out-of-band flag."""
    if data.predicted is None:
        return ""
    label = data.origin
    note = (
        f"Measured ({label}) beside predicted: a model estimate from {PREDICTION_SOURCE}, for this run's plan at "
        "each scenario's measured lengths and concurrency; the band is where published results fell around the "
        "model's estimate in its leave-one-out validation. A measurement outside the band points at a "
        "misconfigured server or a model that needs recalibrating; the term with the largest share (what bounds "
        "the prediction) is the number to question first."
    )
    if data.emulated:
        note += " " + EMULATED_NOTE[0].upper() + EMULATED_NOTE[1:] + "."
    rows = [{str(k): v for k, v in rec.items()} for rec in data.predicted.to_dict(orient="records")]
    return (
        "<h3>Measured beside predicted</h3>"
        + f'<p class="note">{esc(note)}</p>'
        + table(PREDICTED_COLUMNS, rows, "no ok scenario to compare with a prediction")
    )


def speed_section(data: RunData) -> str:
    if data.speed is None:
        return '<p class="note">The speed stage left no results.</p>'
    rows = _errors_once([{str(k): v for k, v in rec.items()} for rec in data.speed.to_dict(orient="records")])
    label = data.origin
    note = f"numbers: {label}"
    if "rescaled" in data.speed.columns and bool(data.speed["rescaled"].any()):
        note += (
            f"; the emulator ran at time scale {float(data.speed['time_scale'].iloc[0]):g} and its latencies "
            "and throughputs are shown rescaled to time scale 1"
        )
    prices = sorted({str(p) for p in data.speed.get("price_source", pd.Series(dtype=object)).dropna()})
    if prices:
        note += "; $/M tokens at the device-hour price of " + ", ".join(prices)
    columns = with_intervals(SPEED_COLUMNS) if repeated(rows) else SPEED_COLUMNS
    note += "; " + REPEATS_NOTE if repeated(rows) else ""
    shown = [c for c in columns if c.key in ("scenario", "status") or any(not missing(r.get(c.key)) for r in rows)]
    sweeps = sweep_goodput(data.speed)
    best = "".join(
        f"<li>{esc(r['sweep'])} (SLO {esc(r['SLO (ms)'])}): "
        + (
            f"highest concurrency meeting it: {int(r['best concurrency meeting the SLO'])}"
            if not missing(r["best concurrency meeting the SLO"])
            else "no concurrency met it"
        )
        + f" (of {esc(r['concurrencies'])})"
        + (
            f"; not judged at {esc(r['not judged (emulator behind)'])}: the emulator fell behind its latency model"
            if r.get("not judged (emulator behind)")
            else ""
        )
        + "</li>"
        for r in sweeps.to_dict("records")
    )
    goodput = f'<p class="note">Goodput, per sweep:</p><ul>{best}</ul>' if best else ""
    found = "".join(
        f"<li>{esc(line)}</li>" for line in operating_point_lines(data.run_dir, data.speed, data.emulated, data.run_id)
    )
    searched = f'<p class="note">Operating point, per search:</p><ul>{found}</ul>' if found else ""
    ran = f'<p class="note">{esc(note)}</p>' + table(shown, rows, "no scenario ran")
    return ran + goodput + searched + predicted_section(data)


def _errors_once(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A cause shared by several scenarios (no native API, a dead server) in full on its first row only."""
    first: dict[str, str] = {}
    for row in rows:
        error = row.get("error")
        if isinstance(error, str) and error:
            key = cause_key(error)
            if key in first:
                row["error"] = f"as for {first[key]}"
            else:
                first[key] = str(row.get("scenario"))
    return rows


def accuracy_section(data: RunData) -> str:
    if data.accuracy is None:
        return '<p class="note">The accuracy stage left no results.</p>'
    comparison = accuracy_comparison(data)
    rows: list[dict[str, Any]] = []
    settings = {r.get("suite"): r.get("settings") for r in data.accuracy}
    judged = {(j.suite, j.metric): j.status for j in accuracy_judgements(data)}
    if comparison is not None and not comparison.empty:
        for raw in comparison.to_dict(orient="records"):
            rec = {str(k): v for k, v in raw.items()}
            lo, hi = rec.get("ci_low"), rec.get("ci_high")
            rec["interval"] = (
                f"[{fmt_number(lo, 3)}, {fmt_number(hi, 3)}]" if lo is not None and hi is not None and lo == lo else ""
            )
            rec["settings"] = details("settings", pre(json.dumps(settings.get(rec["suite"]) or {}, indent=2)))
            rec["judged"] = judged.get((str(rec["suite"]), str(rec["metric"])), "")
            if rec.get("source") == SOURCE_EMULATED and rec.get("ref_rate") is not None:
                rec["delta"], rec["judged"] = None, "not comparable: emulated"
            rows.append(rec)
    rows = _primary_first(rows)
    for r in data.accuracy:
        if r.get("status") != "ok":
            rows.append(
                {
                    "suite": r.get("suite"),
                    "metric": r.get("status"),
                    "source": r.get("source"),
                    "settings": text_cell(r.get("detail")),
                }
            )
    return table(ACCURACY_COLUMNS, rows, "no accuracy rows")


MANIFEST_KEYS = (
    "run_id",
    "launcher",
    "emulated",
    "base_url",
    "sglang_version",
    "max_total_num_tokens",
    "project_commit",
    "python",
    "host_os",
    "started_at",
    "ready_at",
)


def manifest_section(data: RunData) -> str:
    m = data.manifest
    if m is None:
        return '<p class="note">No manifest: the deploy stage did not run or did not finish.</p>'
    rows = [{"item": k, "value": m.get(k)} for k in MANIFEST_KEYS if k in m]
    packages = {k: v for k, v in (m.get("packages") or {}).items() if v}
    parts = [table([Column("item", "item"), Column("value", "value")], rows)]
    parts.append(details(f"packages ({len(packages)})", pre(json.dumps(packages, indent=2))))
    parts.append(details("tool environments", pre(json.dumps(m.get("tool_envs"), indent=2, default=str))))
    hardware = "hardware (of this machine, not of the external server)" if data.external else "hardware"
    parts.append(details(hardware, pre(json.dumps(m.get("hardware"), indent=2, default=str))))
    return "".join(parts)


def stages_section(data: RunData) -> str:
    rows = [{str(k): v for k, v in rec.items()} for rec in stages_table(data).to_dict(orient="records")]
    return table(
        [
            Column("stage", "stage"),
            Column("status", "status", render=lambda v, r: _status(v)),
            Column("duration_s", "duration (s)", "num", 1),
            Column("detail", "detail"),
        ],
        rows,
    )
