"""The report's plain tables (DataFrames) from a collected run: an external server's facts, stages,
invoke and speed rows with their origin, and the text verdict nbval checks (sections.py renders HTML)."""

from __future__ import annotations

import json

import pandas as pd

from .. import invoke
from ..speed.references import LATENCY_METRICS
from ..speed.repeats import MAIN_METRICS
from .collect import RunData
from .verdict import verdict


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
    *LATENCY_METRICS,
    "token_check",
    "error",
)


def speed_table(data: RunData) -> pd.DataFrame | None:
    """The speed rows with their origin; a repeated scenario's N and 95% interval bounds beside its mean."""
    if data.speed is None:
        return None
    columns = list(SPEED_COLUMNS)
    if "n_runs" in data.speed.columns and bool((data.speed["n_runs"].fillna(1) > 1).any()):
        bounds = [f"{m}{s}" for m in MAIN_METRICS for s in ("_ci_low", "_ci_high")]
        columns[columns.index("status") + 1 : columns.index("status") + 1] = ["n_runs"]
        columns[columns.index("token_check") : columns.index("token_check")] = bounds
    df = data.speed[[c for c in columns if c in data.speed.columns]].copy()
    if "label" in df.columns:
        df["label"] = [f"{lab} (run {data.run_id})" for lab in df["label"]]
    return df.rename(columns={"label": "source"})


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
