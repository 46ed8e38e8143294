"""Measured beside predicted: the speed stage's rows against the plan's prediction.

`compare_to_prediction(rows_df, plan)` takes bench_serving rows (speed.results.load_results or
speed.references.reference_frame shape: scenario, max_concurrency, completed, total_input_tokens,
total_output_tokens or input_len/output_len, and the metrics) and returns one row per
scenario and metric with the measured value, the prediction, its band and whether the
measurement falls outside it: a misconfigured server, or a model that needs recalibrating.
`predicted_beside_references()` does the same for the published figures that are never fitted
(params/references with `compare_only: true`, e.g. the one Kimi-K3 figure).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..rundir import row_number
from ._deps import SAVED, Catalog, LaunchPlan, PlanConfig, load_catalog, plan_from_record
from ._deps import plan as make_plan
from .predict import Predictor, Scenario
from .spec import why_text

PREDICTION_SOURCE = "kimi_runbooks.perfmodel, calibration params/perfmodel/calibration.yaml"
EMULATED_NOTE = (
    "this run is EMULATED and the emulator's latencies are this same model's prediction, sampled "
    "(kimi_runbooks.emulator.profile.latency_profile), so agreement is expected by construction, up to the "
    "emulator's interpolation and scheduling and, below time scale 1, the fixed per-request cost of "
    "HTTP and the client, which rescaling magnifies (mostly in TTFT): it checks the pipeline, it does "
    "not validate the model, and an emulated result outside the band says where the emulator's "
    "profile departs from the model"
)

FIRST_PRINCIPLES_NOTE = (
    "FIRST-PRINCIPLES: no measured result of a model with this architecture was fitted or validates it (widened band)"
)

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


def _scenario(row: pd.Series) -> Scenario | None:
    completed = row_number(row.get("completed"))
    tin, tout = row_number(row.get("total_input_tokens")), row_number(row.get("total_output_tokens"))
    if completed > 0 and tin > 0 and tout > 0:  # measured lengths (range ratio < 1 shortens them)
        input_len, output_len = float(round(tin / completed)), float(round(tout / completed))
    else:
        input_len, output_len = row_number(row.get("input_len")), row_number(row.get("output_len"))
        if not (input_len > 0 and output_len > 0):
            return None
    concurrency = row_number(row.get("max_concurrency"))
    rate = row_number(row.get("request_rate"))
    prompts = int(completed) if completed > 0 else None
    ratio = row_number(row.get("random_range_ratio", row.get("range_ratio")))
    fixed = ratio == 1.0  # every request the same lengths: lock-step waves (queueing.synchronized_waves)
    if concurrency > 0:
        return Scenario(
            int(input_len), int(output_len), concurrency=int(concurrency), num_prompts=prompts, fixed_lengths=fixed
        )
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
            measured = row_number(row.get(metric))
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


def _pred_col(metric: str, suffix: str = "") -> str:
    return f"predicted_{metric}{suffix}"


BESIDE_COLUMNS = [
    "scenario",
    *[c for m in COMPARED for c in (m, _pred_col(m), _pred_col(m, "_low"), _pred_col(m, "_high"))],
    "outside_band",
    "bound",
    "prediction",
]
"""`bound`: what the model says sets the predicted TPOT and TTFT, as shares of its own terms
(spec.why_text): the number to question first when the measurement is outside the band."""


def plan_of_run(plan_record: dict[str, Any] | None, *, external: bool = False) -> tuple[LaunchPlan | None, str | None]:
    """(the launch plan a run folder recorded, as saved there; None and why it cannot be).

    An external server was started outside the run: no plan of ours describes it. A plan.json
    written before plans were saved whole (no `saved` key) is rebuilt from its config."""
    if external:
        return None, "external server: no plan of this project describes it"
    if not plan_record or not plan_record.get("config"):
        return None, "no plan recorded in this run folder"
    try:
        if SAVED in plan_record:
            launch = plan_from_record(plan_record)
        else:
            launch = make_plan(PlanConfig(**plan_record["config"]))
    except Exception as exc:  # noqa: BLE001 - an older or hand-edited plan must not break the stage
        return None, f"the recorded plan cannot be rebuilt ({type(exc).__name__}: {exc})"
    if not launch.ok:
        return None, "the recorded plan is invalid: " + "; ".join(str(e) for e in launch.errors)
    return launch, None


def predicted_beside_measured(
    results: pd.DataFrame,
    launch: LaunchPlan | None,
    *,
    emulated: bool = False,
    reason: str | None = None,
    predictor: Predictor | None = None,
) -> pd.DataFrame:
    """One row per ok scenario: measured median TTFT, TPOT and output tok/s, each beside the
    prediction for the run's plan and the scenario's measured lengths and load, with its band
    (`predicted_<metric>_low/_high`); `outside_band` names the metrics measured outside the band
    (a misconfigured server, or a model that needs recalibrating). A scenario that cannot be
    predicted keeps its measurements and says `no prediction: <reason>`; nothing here raises
    for a missing plan or a model failure, so the speed stage and the report always finish."""
    ok = results[results["status"] == "ok"] if "status" in results.columns else results
    records: list[dict[str, Any]] = []
    if launch is not None and predictor is None:
        try:
            predictor = Predictor(launch)
        except Exception as exc:  # noqa: BLE001 - a model failure is reported, never fatal
            reason = f"the model cannot describe this plan ({type(exc).__name__}: {exc})"
    if predictor is None and not reason:
        reason = "no plan"
    label = "predicted (model estimate, " + PREDICTION_SOURCE + ")"
    if predictor is not None and predictor.basis == "first-principles":
        label += "; " + FIRST_PRINCIPLES_NOTE
    if predictor is not None and predictor.shape_basis:
        label += "; " + predictor.shape_basis
    if emulated:
        label += "; " + EMULATED_NOTE
    for _, row in ok.iterrows():
        rec: dict[str, Any] = {"scenario": row.get("scenario")}
        for metric in COMPARED:
            rec[metric] = row_number(row.get(metric))
        why = reason
        scenario = _scenario(row) if predictor is not None else None
        if predictor is not None and scenario is None:
            why = "the result has no input/output lengths or no concurrency/request rate"
        if predictor is not None and scenario is not None:
            try:
                p = predictor.predict(scenario)
            except Exception as exc:  # noqa: BLE001 - one scenario the model cannot take is not fatal
                why = f"{type(exc).__name__}: {exc}"
            else:
                outside = []
                for metric in COMPARED:
                    value, low, high = float(getattr(p, metric)), p.low[metric], p.high[metric]
                    rec.update({_pred_col(metric): value, _pred_col(metric, "_low"): low})
                    rec[_pred_col(metric, "_high")] = high
                    if math.isfinite(rec[metric]) and not (low <= rec[metric] <= high):
                        outside.append(metric)
                rec["outside_band"] = ", ".join(outside)
                rec["bound"] = why_text(p)
                rec["prediction"] = label
                records.append(rec)
                continue
        rec["outside_band"] = ""
        rec["bound"] = ""
        rec["prediction"] = f"no prediction: {why}"
        records.append(rec)
    return pd.DataFrame.from_records(records, columns=BESIDE_COLUMNS)


REFERENCE_METRICS = {
    # published metric -> (Prediction attribute, divide by the prediction's devices)
    "median_ttft_ms": ("median_ttft_ms", False),
    "median_tpot_ms": ("median_tpot_ms", False),
    "output_throughput": ("output_throughput", False),
    "output_tok_s_per_gpu": ("output_throughput", True),
    "total_tok_s_per_gpu": ("total_throughput", True),
}
REFERENCE_COLUMNS = [
    "reference_id",
    "scenario",
    "metric",
    "published",
    "predicted",
    "low",
    "high",
    "ratio",
    "outside_band",
    "calibration_basis",
    "bound",
    "label",
    "source",
    "assumed",
]


def predicted_beside_references(
    catalog: Catalog | None = None, model: str | None = None, for_plan: LaunchPlan | None = None
) -> pd.DataFrame:
    """Every `compare_only` published figure (params/references, never fitted) beside the prediction for
    its plan and scenario: published, predicted, the band, published / predicted and whether the figure
    falls outside the band. This is what, if anything, checks a model the calibration never saw (the
    Kimi-K3 GB300 figure); `model` keeps one model's references, `for_plan` those published for a plan
    that launches the same server (platform, model and SGLang flags)."""
    catalog = catalog or load_catalog()
    records: list[dict[str, Any]] = []
    for ref in catalog.references.values():
        if not getattr(ref, "compare_only", False) or (model is not None and ref.model != model):
            continue
        if for_plan is not None and (ref.platform, ref.model) != (for_plan.platform.id, for_plan.model.id):
            continue
        launch_args = dict(getattr(ref, "launch", None) or {})
        for row in getattr(ref, "rows", None) or []:
            config = {"platform": ref.platform, "model": ref.model, **launch_args, **(row.get("launch") or {})}
            launch = make_plan(PlanConfig(**config), catalog)
            if for_plan is not None and _server_flags(launch) != _server_flags(for_plan):
                continue
            scenario = Scenario(
                int(row["input_len"]),
                int(row["output_len"]),
                concurrency=int(row["concurrency"]),
                num_prompts=row.get("num_prompts"),
                fixed_lengths=bool(row.get("fixed_lengths")),
                accept_length=row.get("accept_length"),  # a speculative row's published accept length
            )
            p = Predictor(launch).predict(scenario)
            for metric, published in (row.get("metrics") or {}).items():
                if metric not in REFERENCE_METRICS:
                    raise ValueError(
                        f"reference {ref.id}: metric {metric!r} cannot be compared with a prediction. "
                        f"Fix: use one of {sorted(REFERENCE_METRICS)}"
                    )
                attr, per_device = REFERENCE_METRICS[metric]
                scale = 1.0 / p.devices if per_device else 1.0
                predicted, low, high = (v * scale for v in (getattr(p, attr), p.low[attr], p.high[attr]))
                records.append(
                    {
                        "reference_id": ref.id,
                        "scenario": row["scenario"],
                        "metric": metric,
                        "published": float(published),
                        "predicted": predicted,
                        "low": low,
                        "high": high,
                        "ratio": float(published) / predicted if predicted > 0 else math.nan,
                        "outside_band": bool(not (low <= float(published) <= high)),
                        "calibration_basis": p.calibration_basis,
                        "bound": why_text(p),
                        "label": "published reference vs predicted (model estimate, never fitted to it)",
                        "source": ref.source,
                        "assumed": row.get("assumed", ""),
                    }
                )
    return pd.DataFrame.from_records(records, columns=REFERENCE_COLUMNS)


def out_of_sample_summary(table: pd.DataFrame) -> str:
    """The compare-only figures as validation reads them: per reference and over all, the median
    |error| (predicted / published - 1) of TPOT and throughput and of TTFT, results inside the band
    shown and the band's median high/low. These figures were never fitted: an out-of-sample check."""
    if table.empty:
        return "(no compare-only published references)"

    def line(name: str, rows: pd.DataFrame) -> str:
        err = (1.0 / rows["ratio"] - 1.0).abs()
        speed = ~rows["metric"].str.contains("ttft")
        parts = [
            f"{name[:36]:36} {len(rows):2d} figures",
            f"TPOT/throughput |err| {err[speed].median():.0%}" if speed.any() else "TPOT/throughput -",
            f"TTFT |err| {err[~speed].median():.0%}" if (~speed).any() else "TTFT -",
            f"in band {int((~rows['outside_band']).sum())}/{len(rows)}",
            f"high/low x{(rows['high'] / rows['low']).median():.1f}",
        ]
        return "  " + ", ".join(parts)

    lines = [line(str(ref), rows) for ref, rows in table.groupby("reference_id", sort=True)]
    return "\n".join([*lines, line("all", table)])


def _server_flags(launch: LaunchPlan) -> list[str]:
    """The plan's SGLang flags without where it listens (host, port) and node wiring."""
    skip = {"--host", "--port", "--node-rank", "--dist-init-addr", "--nnodes"}
    out, argv, i = [], list(launch.argv), 0
    while i < len(argv):
        if argv[i] in skip:
            i += 2 if i + 1 < len(argv) and not argv[i + 1].startswith("--") else 1
            continue
        out.append(argv[i])
        i += 1
    return out


def format_reference_checks(table: pd.DataFrame) -> str:
    """The compare-only references as text: published beside PREDICTED, with the band and its basis."""
    if table.empty:
        return "no compare-only published references\n"
    lines = ["## published references (never fitted) beside the PREDICTED value (kimi_runbooks.perfmodel)"]
    for _, r in table.iterrows():
        verdict = "OUTSIDE the band" if r["outside_band"] else "inside the band"
        lines.append(
            f"{r['reference_id']} {r['scenario']} {r['metric']}: published {r['published']:,.1f}, "
            f"predicted {r['predicted']:,.1f} [{r['low']:,.1f}-{r['high']:,.1f}] ({r['calibration_basis']}), "
            f"published/predicted {r['ratio']:.2f}: {verdict}"
        )
        if r["bound"]:
            lines.append(f"  what bounds the prediction: {r['bound']}")
        if r["assumed"]:
            lines.append(f"  assumed: {r['assumed']}")
        lines.append(f"  source: {r['source']}")
    return "\n".join(lines) + "\n"


def published_for_plan_text(launch: LaunchPlan) -> str:
    """The compare-only published figures of this very server (same platform, model and flags) beside
    their predictions, as text for `plan --predict` and the command generator; "" when there are none."""
    table = predicted_beside_references(for_plan=launch)
    return "" if table.empty else format_reference_checks(table)
