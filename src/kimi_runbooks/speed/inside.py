"""What the server and its devices did while each scenario ran: a table and time-series figures.

The rows come from load_results (observe.py's fields flattened by results.observed_columns); the
time series from run_dir/metrics/<scenario>.jsonl and run_dir/telemetry/<scenario>.jsonl. Every
figure and column says whether its numbers are measured or emulated, and where the price of the
cost column comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..rundir import RunFolder, read_jsonl
from .goodput import DEFAULT_ATTAINMENT
from .probe_verdict import CONFIRM
from .references import family
from .saturation import concurrency_label

INSIDE_COLUMNS = {
    "scenario": "scenario",
    "label": "origin",
    "concurrency": "concurrency (effective)",
    "saturation_reasons": "saturated because",
    "not_representative": "not representative because",
    "server_peak_queued": "peak queued",
    "server_peak_token_usage": "peak KV usage",
    "slo": "SLO (ms)",
    "slo_attainment": "SLO met by",
    "goodput_tok_s": "goodput tok/s",
    "joules_per_output_token": "J / output token",
    "usd_per_million_output_tokens": "$ / M output tokens",
    "price_source": "price source",
    "metrics_note": "metrics",
    "telemetry_where": "telemetry",
}


def inside_table(results: pd.DataFrame) -> pd.DataFrame:
    """One row per scenario: effective concurrency, saturation, goodput, energy and cost."""
    if results is None or results.empty:
        return pd.DataFrame(columns=list(INSIDE_COLUMNS.values()))
    df = results.copy()
    df["concurrency"] = [
        concurrency_label(r.get("max_concurrency"), r.get("effective_concurrency"), r.get("emulator_behind"))
        for _, r in df.iterrows()
    ]
    keep = [c for c in INSIDE_COLUMNS if c in df.columns]
    return df[keep].rename(columns=INSIDE_COLUMNS)


def sweep_goodput(results: pd.DataFrame, attainment: float = DEFAULT_ATTAINMENT) -> pd.DataFrame:
    """Per sweep (scenarios that differ only in concurrency) with an SLO: the concurrencies run,
    and the highest one at which at least `attainment` of the requests met the SLO. A step the
    emulator fell behind on (`emulator_behind`: its latencies are the host's) is not judged: it is
    never the best, and `not judged` lists it."""
    columns = [
        "sweep",
        "SLO (ms)",
        "concurrencies",
        "best concurrency meeting the SLO",
        "SLO met by there",
        "not judged (emulator behind)",
    ]
    if results is None or results.empty or "slo_attainment" not in results.columns:
        return pd.DataFrame(columns=columns)
    rows = []
    if "max_concurrency" not in results.columns:
        return pd.DataFrame(columns=columns)
    done = results[results["slo_attainment"].notna() & results["max_concurrency"].notna()]  # not rate-paced runs
    done = done[~done["scenario"].astype(str).str.endswith(CONFIRM)]  # an operating point's re-runs, not a step
    for name, part in done.groupby(done["scenario"].map(family), sort=False):
        part = part.sort_values("max_concurrency")
        no_lag = pd.Series(False, index=part.index)
        behind = part["emulator_behind"].eq(True) if "emulator_behind" in part.columns else no_lag
        met = part[(part["slo_attainment"] >= attainment) & ~behind]
        best = met.iloc[-1] if len(met) else None
        rows.append(
            {
                "sweep": name,
                "SLO (ms)": part["slo"].iloc[0],
                "concurrencies": ", ".join(str(int(c)) for c in part["max_concurrency"]),
                "best concurrency meeting the SLO": int(best["max_concurrency"]) if best is not None else None,
                "SLO met by there": float(best["slo_attainment"]) if best is not None else None,
                "not judged (emulator behind)": ", ".join(str(int(c)) for c in part[behind]["max_concurrency"]),
            }
        )
    return pd.DataFrame(rows, columns=columns)


SERIES = (
    ("num_running_reqs", "running requests"),
    ("num_queue_reqs", "queued requests"),
    ("token_usage", "KV pool usage"),
)


def series_frame(run_dir: str | Path, scenario_ids: list[str]) -> pd.DataFrame:
    """Long frame (scenario, t, series, value) of the /metrics and telemetry samples; t counts from
    the last idle /metrics sample before the server first ran a request of the scenario
    (`_first_request_at`), so the client's start-up does not push the requests off the chart."""
    folder = RunFolder(run_dir)
    rows: list[dict[str, Any]] = []
    for sid in scenario_ids:
        samples = _read(folder.metrics_series(sid))
        since = _first_request_at(samples)
        for sample in samples:
            if sample["t"] < since:
                continue
            for key, name in SERIES:
                if isinstance(sample.get(key), (int, float)):
                    t = round(sample["t"] - since, 3)
                    rows.append({"scenario": sid, "t": t, "series": name, "value": float(sample[key])})
        for sample in _read(folder.telemetry_series(sid)):
            powers = [d.get("power_w") for d in sample.get("devices", []) if d.get("power_w") is not None]
            if powers and sample["t"] >= since:
                t = round(sample["t"] - since, 3)
                rows.append({"scenario": sid, "t": t, "series": "board power (W)", "value": sum(powers)})
    return pd.DataFrame(rows, columns=["scenario", "t", "series", "value"])


def _first_request_at(samples: list[dict[str, Any]]) -> float:
    """Time of the last sample before the first one with requests running or queued (0 if none):
    the bench client's start-up (seconds for the stage's first scenario) is left off the chart."""
    timed = [s for s in samples if isinstance(s.get("t"), (int, float)) and "error" not in s]
    busy = [i for i, s in enumerate(timed) if s.get("num_running_reqs") or s.get("num_queue_reqs")]
    if not busy:
        return 0.0
    return float(timed[max(busy[0] - 1, 0)]["t"])


def _read(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path) if path.exists() else []


MIN_DRAWN_SAMPLES = 2
"""A scenario's series is drawn only with at least this many /metrics samples taken while requests
ran: fewer would be drawn as a flat line that looks like data."""


def _busy_samples(run_dir: str | Path, scenario: str) -> int:
    samples = _read(RunFolder(run_dir).metrics_series(scenario))
    return sum(1 for s in samples if isinstance(s.get("num_running_reqs"), (int, float)) and s["num_running_reqs"] > 0)


def undrawn_series(run_dir: str | Path, results: pd.DataFrame, *, max_scenarios: int = 6) -> dict[str, str]:
    """Scenario -> why its inside-the-server series are not drawn (too few samples while it ran)."""
    if results is None or results.empty or "scenario" not in results.columns:
        return {}
    out = {}
    for sid in [str(s) for s in results["scenario"]][:max_scenarios]:
        path = RunFolder(run_dir).metrics_series(sid)
        if not path.exists():
            continue
        busy = _busy_samples(run_dir, sid)
        if busy < MIN_DRAWN_SAMPLES:
            out[sid] = (
                f"{busy} /metrics sample(s) taken while its requests ran (fewer than {MIN_DRAWN_SAMPLES}): "
                "too few to draw, not shown"
            )
    return out


def _drawn_frame(run_dir: str | Path, results: pd.DataFrame, max_scenarios: int) -> pd.DataFrame:
    """The samples of the scenarios with enough of them to draw (`undrawn_series` names the others)."""
    if results is None or results.empty or "scenario" not in results.columns:
        return pd.DataFrame(columns=["scenario", "t", "series", "value"])
    skipped = undrawn_series(run_dir, results, max_scenarios=max_scenarios)
    ids = [str(s) for s in results["scenario"]][:max_scenarios]
    return series_frame(run_dir, [i for i in ids if i not in skipped])


def _zero_series(frame: pd.DataFrame) -> list[str]:
    """Series whose every sample in every drawn scenario is 0 (a flat line at 0 is said, not drawn)."""
    return [str(name) for name, part in frame.groupby("series", sort=False) if (part["value"] == 0).all()]


def zero_throughout(run_dir: str | Path, results: pd.DataFrame, *, max_scenarios: int = 6) -> str | None:
    """The line that replaces the series left out of `server_timeseries` for being 0 throughout."""
    zero = _zero_series(_drawn_frame(run_dir, results, max_scenarios))
    return f"{', '.join(zero)}: 0 throughout every scenario, not drawn" if zero else None


def inside_notes(run_dir: str | Path, results: pd.DataFrame, *, max_scenarios: int = 6) -> list[str]:
    """What `server_timeseries` leaves out and why, one line each: scenarios with too few samples,
    series that are 0 throughout."""
    skipped = undrawn_series(run_dir, results, max_scenarios=max_scenarios)
    zero = zero_throughout(run_dir, results, max_scenarios=max_scenarios)
    return [f"{sid}: {why}" for sid, why in skipped.items()] + ([zero] if zero else [])


def server_timeseries(run_dir: str | Path, results: pd.DataFrame, *, max_scenarios: int = 6) -> go.Figure | None:
    """Running, queued, KV usage (and board power when sampled) over each scenario's run; None
    when nothing was sampled. A scenario with too few samples while it ran is left out
    (`undrawn_series` says which), and so is a series that is 0 throughout (`zero_throughout`
    says which). The title says measured or emulated."""
    frame = _drawn_frame(run_dir, results, max_scenarios)
    zero = set(_zero_series(frame))
    names = [n for _, n in SERIES] + ["board power (W)"]
    present = [n for n in names if n in set(frame["series"]) and n not in zero]
    if not present:
        return None
    fig = make_subplots(rows=len(present), cols=1, shared_xaxes=True, subplot_titles=present, vertical_spacing=0.08)
    for row, name in enumerate(present, 1):
        part = frame[frame["series"] == name]
        for sid, points in part.groupby("scenario", sort=False):
            fig.add_trace(
                go.Scatter(
                    x=points["t"],
                    y=points["value"],
                    mode="lines",
                    name=str(sid),
                    legendgroup=str(sid),
                    showlegend=row == 1,
                ),
                row=row,
                col=1,
            )
    emulated = bool(results.get("emulated", pd.Series(dtype=bool)).fillna(False).astype(bool).any())
    origin = "emulated (the emulator's /metrics, its latency model)" if emulated else "measured"
    fig.update_layout(
        title=f"Inside the server during each scenario: {origin}",
        height=220 * len(present) + 80,
        template="plotly_white",
    )
    fig.update_xaxes(
        title_text="seconds since the server first ran a request of the scenario (its warm-up, if any)",
        row=len(present),
        col=1,
    )
    return fig
