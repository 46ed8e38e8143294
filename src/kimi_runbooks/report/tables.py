"""The report's tables and figures, built from a collected run (`RunData`)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from .. import invoke
from ..accuracy.compare import chart as accuracy_chart
from ..speed import latency_table as speed_latency_table
from ..speed import latency_vs_concurrency, pareto, reference_frame, throughput_vs_concurrency
from .collect import RunData
from .verdict import accuracy_comparison, verdict


def plan_table(data: RunData) -> pd.DataFrame:
    config = (data.plan or {}).get("config") or {}
    rows = [(k, v) for k, v in config.items() if v not in (None, [], {}, "")]
    df = pd.DataFrame(rows, columns=["knob", "value"])
    df["source"] = "plan (params recipe + runbook parameters)"
    return df


def external_table(data: RunData) -> pd.DataFrame:
    """What is known about a server this run attached to: no launch command or memory plan, since
    none was used; its URL, served model, how readiness was proven and its /server_info, if any."""
    handle, manifest = data.handle or {}, data.manifest or {}
    readiness = handle.get("readiness") or {}
    info = {"version": manifest.get("sglang_version"), **(manifest.get("server_args") or {})}
    info = {k: v for k, v in info.items() if v is not None}
    rows = [
        ("base_url", handle.get("base_url") or manifest.get("base_url")),
        ("served model", handle.get("model") or manifest.get("model")),
        ("models listed by /v1/models", ", ".join(readiness.get("model_ids") or []) or None),
        ("health checked by", readiness.get("health_method")),
        ("API key from", f"${handle['api_key_env']}" if handle.get("api_key_env") else "(none)"),
        ("server_info", json.dumps(info)[:500] if info else "not available (no /server_info or /get_server_info)"),
        ("launch command", "none: the server was started outside this run"),
        ("devices", "unknown: per-device figures only when the speed stage is given devices"),
    ]
    return pd.DataFrame([(k, v) for k, v in rows if v is not None], columns=["item", "value"])


def memory_table(data: RunData) -> pd.DataFrame:
    memory = dict((data.plan or {}).get("memory") or {})
    notes = memory.pop("notes", [])
    rows = [
        (k, v, f"estimate (planner, {memory.get('source', 'estimate')})") for k, v in memory.items() if k != "source"
    ]
    live = (data.manifest or {}).get("max_total_num_tokens") or (data.handle or {}).get("max_total_num_tokens")
    if live:
        rows.append(("max_total_num_tokens (live /server_info)", live, "emulated" if data.emulated else data.run_label))
    rows += [("note", n, "planner") for n in notes]
    return pd.DataFrame(rows, columns=["item", "value", "source"])


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


def manifest_table(data: RunData) -> pd.DataFrame:
    m = data.manifest or {}
    rows = [(k, m.get(k)) for k in MANIFEST_KEYS if k in m]
    packages = m.get("packages") or {}
    rows += [(f"package {k}", v) for k, v in packages.items() if v]
    hw = m.get("hardware")
    name = "hardware (of this machine, not of the external server)" if data.external else "hardware"
    rows.append((name, hw if isinstance(hw, str) else json.dumps(hw)[:500]))
    return pd.DataFrame(rows, columns=["item", "value"])


def invoke_table(data: RunData) -> pd.DataFrame | None:
    if data.invoke is None:
        return None
    return invoke.summary_table(data.invoke)


def invoke_counts(data: RunData) -> dict[str, int] | None:
    if data.invoke is None:
        return None
    return invoke.counts(data.invoke)


SPEED_COLUMNS = (
    "scenario",
    "status",
    "label",
    "max_concurrency",
    "completed",
    "output_throughput",
    "output_tok_s_per_gpu",
    "tok_s_per_user",
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_tpot_ms",
    "p99_tpot_ms",
    "median_itl_ms",
    "p99_itl_ms",
    "token_check",
    "error",
)


def speed_table(data: RunData) -> pd.DataFrame | None:
    if data.speed is None:
        return None
    df = data.speed[[c for c in SPEED_COLUMNS if c in data.speed.columns]].copy()
    if "label" in df.columns:
        df["label"] = [f"{lab} (run {data.run_id})" for lab in df["label"]]
    return df.rename(columns={"label": "source"})


def latency_table(data: RunData) -> pd.DataFrame | None:
    if data.speed is None or data.speed.empty:
        return None
    ok = data.speed[data.speed["status"] == "ok"] if "status" in data.speed.columns else data.speed
    return speed_latency_table(ok) if not ok.empty else None


def reference_table(data: RunData) -> pd.DataFrame:
    """The platform's published speed rows (labelled reference + source)."""
    if not data.platform:
        return pd.DataFrame()
    refs = reference_frame(data.platform)
    cols = [
        c
        for c in (
            "scenario",
            "max_concurrency",
            "output_throughput",
            "output_tok_s_per_gpu",
            "tok_s_per_user",
            "median_ttft_ms",
            "median_tpot_ms",
            "source",
        )
        if c in refs.columns
    ]
    return refs[cols] if not refs.empty else refs


def speed_figures(data: RunData) -> list[Any]:
    """The speed stage's own figures (bench_figures), this run beside the platform's references."""
    if data.speed is None or data.speed.empty:
        return []
    run = data.speed.copy()
    run["platform"] = data.platform
    refs = reference_frame(data.platform) if data.platform else None
    return [pareto(run, refs), throughput_vs_concurrency(run, refs), latency_vs_concurrency(run, refs)]


def accuracy_table(data: RunData) -> pd.DataFrame | None:
    if data.accuracy is None:
        return None
    df = pd.DataFrame.from_records(data.accuracy)
    if "source" not in df.columns and "label" not in df.columns:
        df["source"] = "emulated" if data.emulated else f"measured (run {data.run_id})"
    return df


def stages_table(data: RunData) -> pd.DataFrame:
    return pd.DataFrame(
        [(s.name, s.status, s.detail, s.duration_s) for s in data.stages.values()],
        columns=["stage", "status", "detail", "duration_s"],
    )


def summary_text(data: RunData) -> str:
    """Plain-text verdict block (the nbval-checked output of runbooks and the report)."""
    v = verdict(data)
    lines = [f"verdict: {v.level} - {v.headline}"]
    lines += [f"  - {r}" for r in v.reasons]
    lines.append(f"platform: {data.platform}  model: {data.model}  emulated: {data.emulated}")
    lines += [f"stage {s.name}: {s.status}" for s in data.stages.values()]
    c = invoke_counts(data)
    if c is not None:
        lines.append(f"invoke: {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped")
    return "\n".join(lines)


def accuracy_figures(data: RunData) -> list[Any]:
    table = accuracy_comparison(data)
    if table is None or table.empty:
        return []
    return [accuracy_chart(table)]
