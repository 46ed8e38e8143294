"""Emulated results put back on the latency model's clock.

A rehearsal runs the emulator at a time scale (0.05: every simulated duration is slept 20x
shorter), so its latencies are time_scale x and its throughputs 1/time_scale x what the emulator's
latency model describes. Compared with a hardware reference as they are, a 20x-fast rehearsal
would look 20x faster than the hardware. `rescale` divides latencies and multiplies throughputs
back and marks every row it touched (a trace scenario's per-turn figures, `turns`, with the
rest: its TTFTs divided, its tok/s per user multiplied; so are the streaming probe's times to the
first reasoning and answer token); what the client itself adds (HTTP, parsing: well under a
millisecond per request here) is scaled up with the rest, so rescaled latencies slightly overstate.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from .repeats import INTERVAL_SUFFIXES
from .results import add_derived

INTERVAL_COLUMN = re.compile("(" + "|".join(INTERVAL_SUFFIXES) + ")$")

LATENCY_COLUMN = re.compile(
    r"^(mean|median|std|p\d+(_\d+)?|max|min)_(ttft|tpot|itl|e2e_latency|first_answer|first_reasoning)_ms$"
)
THROUGHPUT_COLUMNS = (
    "request_throughput",
    "input_throughput",
    "output_throughput",
    "total_throughput",
    "max_output_tokens_per_s",
    "goodput_req_s",
    "goodput_tok_s",
    "request_goodput",
)
DURATION_COLUMNS = ("duration", "usd_per_million_output_tokens")  # cost: price x time per token
DERIVED = ("output_tok_s_per_gpu", "total_tok_s_per_gpu", "tok_s_per_user")
TURN_THROUGHPUTS = ("tok_s_per_user",)
"""In a row's per-turn figures (speed.traces.per_turn), what is multiplied; every `*_ms` key is divided."""
NESTED_TIMES = ("turns", "first_answer", "answer_latency")
"""Columns holding records with times: per-turn figures, the streaming probe's (speed.answer_probe) and
the per-request answer figures under load (speed.answer_latency; its own per-turn list too)."""


def rescale_turns(turns: Any, scale: float) -> Any:
    """Per-turn figures (a list of dicts) or one record (a dict, the streaming probe's) on the same
    clock as their row (new objects): `*_ms` values divided, TURN_THROUGHPUTS multiplied; anything
    else (a missing value) is returned as it is."""
    if isinstance(turns, list):
        return [rescale_turns(turn, scale) for turn in turns]
    if not isinstance(turns, dict):
        return turns
    new = dict(turns)
    for key, value in turns.items():
        if key == "turns":  # a record's own per-turn list
            new[key] = rescale_turns(value, scale)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if key.endswith("_ms"):
            new[key] = value / scale
        elif key in TURN_THROUGHPUTS:
            new[key] = value * scale
    return new


def rescale(df: pd.DataFrame, time_scale: float | None) -> pd.DataFrame:
    """The rows as if the emulator had run at time scale 1 (a copy); unchanged when time_scale is 1
    or unknown. Adds `time_scale` (the scale the run used) and `rescaled` (True where changed)."""
    out = df.copy()
    scale = float(time_scale) if time_scale else 1.0
    out["time_scale"] = scale
    out["rescaled"] = False
    if out.empty or scale == 1.0 or scale <= 0:
        return out
    mask = out["emulated"].fillna(False).astype(bool) if "emulated" in out.columns else pd.Series(True, out.index)
    mask &= out["status"].eq("ok") if "status" in out.columns else True
    for col in out.columns:
        base = INTERVAL_COLUMN.sub("", col)  # a repeated scenario's interval and sd scale with its metric
        if LATENCY_COLUMN.match(base) or base in DURATION_COLUMNS:
            out.loc[mask, col] = pd.to_numeric(out.loc[mask, col], errors="coerce") / scale
        elif base in THROUGHPUT_COLUMNS:
            out.loc[mask, col] = pd.to_numeric(out.loc[mask, col], errors="coerce") * scale
    for nested in NESTED_TIMES:
        if nested in out.columns:
            out[nested] = out[nested].astype(object)
            for index in out.index[mask]:
                out.at[index, nested] = rescale_turns(out.at[index, nested], scale)
    out.loc[mask, "rescaled"] = True
    recomputed = add_derived(out.drop(columns=[c for c in DERIVED if c in out.columns]))
    return recomputed
