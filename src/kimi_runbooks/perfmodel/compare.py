"""Measured beside predicted: the speed stage's rows against the plan's prediction.

`compare_to_prediction(rows_df, plan)` takes bench_serving rows (speed.results.load_results or
speed.compare.reference_frame shape: scenario, max_concurrency, completed, total_input_tokens,
total_output_tokens or input_len/output_len, and the metrics) and returns one row per
scenario and metric with the measured value, the prediction, its band and whether the
measurement falls outside it: a misconfigured server, or a model that needs recalibrating.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ._deps import LaunchPlan
from .predict import Predictor, Scenario

COMPARED = ("median_ttft_ms", "median_tpot_ms", "output_throughput")
COLUMNS = [
    "scenario",
    "metric",
    "measured",
    "predicted",
    "low",
    "high",
    "ratio",
    "outside_band",
    "label",
    "input_len",
    "output_len",
    "concurrency",
    "note",
]


def _num(value: Any) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return math.nan
    return v


def _scenario(row: pd.Series) -> Scenario | None:
    completed = _num(row.get("completed"))
    tin, tout = _num(row.get("total_input_tokens")), _num(row.get("total_output_tokens"))
    if completed > 0 and tin > 0 and tout > 0:  # measured lengths (range ratio < 1 shortens them)
        input_len, output_len = float(round(tin / completed)), float(round(tout / completed))
    else:
        input_len, output_len = _num(row.get("input_len")), _num(row.get("output_len"))
        if not (input_len > 0 and output_len > 0):
            return None
    concurrency = _num(row.get("max_concurrency"))
    rate = _num(row.get("request_rate"))
    prompts = int(completed) if completed > 0 else None
    if concurrency > 0:
        return Scenario(int(input_len), int(output_len), concurrency=int(concurrency), num_prompts=prompts)
    if rate > 0 and math.isfinite(rate):
        return Scenario(int(input_len), int(output_len), request_rate=rate, num_prompts=prompts)
    return None


def compare_to_prediction(rows_df: pd.DataFrame, plan: LaunchPlan, predictor: Predictor | None = None) -> pd.DataFrame:
    predictor = predictor or Predictor(plan)
    records = []
    ok = rows_df[rows_df["status"] == "ok"] if "status" in rows_df.columns else rows_df
    for _, row in ok.iterrows():
        scenario = _scenario(row)
        if scenario is None:
            records.append({"scenario": row.get("scenario"), "note": "no lengths or load: not predicted"})
            continue
        p = predictor.predict(scenario)
        for metric in COMPARED:
            measured = _num(row.get(metric))
            predicted = float(getattr(p, metric))
            if not math.isfinite(measured):
                continue
            low, high = p.low[metric], p.high[metric]
            records.append(
                {
                    "scenario": row.get("scenario"),
                    "metric": metric,
                    "measured": measured,
                    "predicted": predicted,
                    "low": low,
                    "high": high,
                    "ratio": measured / predicted if predicted > 0 else math.nan,
                    "outside_band": bool(not (low <= measured <= high)),
                    "label": "predicted (model estimate)",
                    "input_len": scenario.input_len,
                    "output_len": scenario.output_len,
                    "concurrency": scenario.concurrency,
                    "note": "",
                }
            )
    return pd.DataFrame.from_records(records, columns=COLUMNS)
