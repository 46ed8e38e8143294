"""The run's verdict and warnings: what a reviewer must know first."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..accuracy.judgement import Judgement, judge
from ..accuracy.references import compare as compare_accuracy
from ..origin import REHEARSAL_LABEL
from ..perfmodel.beside_measured import PREDICTION_SOURCE
from ..speed import compare, reference_frame
from .collect import RunData
from .diagnoses import SERVER_CAUSES, diagnoses


@dataclass(frozen=True)
class Verdict:
    level: str  # PASS, WARN, FAIL, INCOMPLETE, INVALID
    headline: str
    reasons: list[str]
    diagnosed: bool = False
    """The headline names the run's cause itself (diagnoses.py), not only a count."""


@dataclass(frozen=True)
class Warning_:
    kind: str
    """security, plan, failed, not comparable, skipped, regression, accuracy, prediction, emulated, balance, report"""
    text: str


def speed_comparison(data: RunData, tolerance: float = 0.1) -> pd.DataFrame:
    """speed.references.compare of this run against the platform's published references."""
    if data.speed is None or data.speed.empty or not data.platform:
        return pd.DataFrame()
    refs = reference_frame(data.platform)
    return compare(data.speed, refs, tolerance=tolerance)


def accuracy_comparison(data: RunData) -> pd.DataFrame | None:
    """accuracy.references.compare of this run's rows with the published accuracy, or None."""
    if not data.accuracy:
        return None
    return compare_accuracy(data.accuracy)


def accuracy_judgements(data: RunData) -> list[Judgement]:
    """Each suite's primary metric judged against its published figure (accuracy.judgement)."""
    return judge(data.accuracy) if data.accuracy else []


def _is_loopback(host: str | None) -> bool:
    return host in (None, "127.0.0.1", "localhost", "::1")


def warnings(data: RunData) -> list[Warning_]:
    out: list[Warning_] = []
    config = (data.plan or {}).get("config") or {}
    if data.emulated:
        out.append(
            Warning_(
                "emulated",
                "EMULATED run: every timing comes from the project's emulator "
                "(a latency model), not from hardware; it rehearses the runbook only.",
            )
        )
    if data.rehearsal:
        out.append(
            Warning_(
                "emulated",
                f"{REHEARSAL_LABEL} run: SGLang itself served a tiny random-weight checkpoint of the plan's model on "
                "this machine's CPU. Its HTTP answers, parsers, errors and metrics are SGLang's; its timings are a "
                "toy's on a CPU and its answers nonsense by design. The plan's flags that cannot apply on a CPU are "
                "listed under 'CPU rehearsal'.",
            )
        )
    if not _is_loopback(config.get("host")) and not config.get("api_key_env"):
        out.append(
            Warning_(
                "security",
                f"the server binds {config.get('host')} with no API key: "
                "anyone on the network can use it. Fix: set api_key_env, or host=127.0.0.1.",
            )
        )
    elif not _is_loopback(config.get("host")):
        out.append(
            Warning_("security", f"the server binds {config.get('host')} (reachable from the network, key required).")
        )
    planned = [str(text) for text in (data.plan or {}).get("warnings") or []]
    out += [Warning_("plan", text) for text in dict.fromkeys(planned)]
    for text in dict.fromkeys(str(t) for t in (data.manifest or {}).get("warnings") or []):
        if text not in planned:  # the deploy stage records the plan's warnings again in its manifest
            out.append(Warning_("deploy", text))
    if data.speed is not None and "status" in data.speed.columns:
        kinds = {"failed": "failed", "not comparable": "not comparable"}  # over-capacity, skipped: not run
        for _, row in data.speed[data.speed["status"] != "ok"].iterrows():
            error = row.get("error")
            out.append(
                Warning_(
                    kinds.get(str(row["status"]), "skipped"),
                    f"speed scenario {row['scenario']}: {row['status']}"
                    + (f" ({error})" if isinstance(error, str) else ""),
                )
            )
    for r in data.invoke or []:
        if r.status == "skip":
            out.append(Warning_("skipped", f"invoke check {r.name} skipped: {r.reason}"))
    comparison = speed_comparison(data)
    if not comparison.empty and not data.rehearsal:  # a toy on a CPU against hardware figures says nothing
        for _, row in comparison[comparison["regression"]].iterrows():
            origin = data.run_label.split(" (run")[0]
            out.append(
                Warning_(
                    "regression",
                    f"{row['scenario']} {row['metric']}: {origin} {row['run_value']:.4g}{_mean_of(row)} "
                    f"vs reference {row['reference_value']:.4g} (ratio {row['ratio']:.2f}, "
                    f"{row['better']} is better; {row['reference_source']})",
                )
            )
    for j in accuracy_judgements(data):
        if j.status == "below":  # an emulated suite is "not comparable: emulated", shown on its card
            out.append(Warning_("accuracy", j.text))
    out += prediction_warnings(data)
    if data.speed is not None and "starved_servers" in data.speed.columns:
        for _, row in data.speed[data.speed["starved_servers"].notna()].iterrows():
            out.append(Warning_("balance", f"speed scenario {row['scenario']}: {row['starved_servers']}"))
    for text in data.problems:
        out.append(Warning_("report", text))
    return out


def _mean_of(row: pd.Series) -> str:
    """` (mean of N runs)` for a repeated scenario's comparison, else nothing."""
    n = row.get("run_n")
    return f" (mean of {int(n)} runs)" if n is not None and n == n and int(n) > 1 else ""


def prediction_warnings(data: RunData) -> list[Warning_]:
    """One warning per metric measured outside the performance model's band (never a verdict change:
    the model's band comes from published results, it is no acceptance threshold)."""
    out: list[Warning_] = []
    predicted = data.predicted
    if predicted is None or predicted.empty:
        return out
    origin = data.run_label.split(" (run")[0]
    for _, row in predicted[predicted["outside_band"].astype(bool)].iterrows():
        for metric in str(row["outside_band"]).split(", "):
            out.append(
                Warning_(
                    "prediction",
                    f"{row['scenario']} {metric}: {origin} {row[metric]:.4g} outside the predicted band "
                    f"[{row[f'predicted_{metric}_low']:.4g}, {row[f'predicted_{metric}_high']:.4g}] "
                    f"(predicted {row[f'predicted_{metric}']:.4g}, {PREDICTION_SOURCE}): a misconfigured "
                    "server, or a model that needs recalibrating"
                    + (
                        f" (the prediction is bound by {row['bound']}: question its largest term first)"
                        if row.get("bound")
                        else ""
                    ),
                )
            )
    return out


def verdict(data: RunData) -> Verdict:
    """INVALID (plan refused), FAIL (a stage or any unit of its work failed), INCOMPLETE (a
    requested stage did not run), WARN (part of a stage's work failed, an accuracy suite below its
    published figure beyond its interval, a router that starved a server behind it (speed/replicas.py),
    or regressions vs references on a measured run; an accuracy
    suite past its reference's fail_drop is a FAIL), else PASS: never PASS with a failure counted anywhere."""
    if data.plan_errors:
        return Verdict("INVALID", "the plan failed validation; no server was started", list(data.plan_errors))
    derived = data.outcomes
    harness = [
        f"stage {s.name} failed: {s.detail}"
        for s in data.stages.values()
        if s.status == "failed" and not (s.name in derived and s.detail == derived[s.name].reason)
    ]
    failed = list(harness)
    for outcome in derived.values():
        failed += outcome.failures
    failed += [j.text for j in accuracy_judgements(data) if j.status == "fail" and j.text not in failed]
    if failed:
        # the causes under many failures lead: a dead server or one that is not SGLang, then a stage
        # that broke by itself (the harness), then a server that is not Kimi; the units follow
        found = diagnoses(data)
        server = [d for d in found if d.kind in SERVER_CAUSES]
        model = [d for d in found if d.kind not in SERVER_CAUSES]
        reasons = [d.text for d in server] + harness + [d.text for d in model] + failed[len(harness) :]
        lead = server[0].short if server else None if harness or not model else model[0].short
        if lead is None:
            return Verdict("FAIL", f"{len(failed)} failure(s)", reasons)
        return Verdict("FAIL", f"{lead}; {len(failed)} failure(s) in all", reasons, diagnosed=True)
    missing = [
        f"stage {s.name}: {s.status} ({s.detail})"
        for s in data.stages.values()
        if s.status not in ("ok", "degraded") and s.detail != "not requested (stages parameter)"
    ]
    missing += [
        f"accuracy suite {r.get('suite')} skipped: {str(r.get('detail') or '')[:200]}"
        for r in data.accuracy or []
        if r.get("status") == "skipped"
    ]
    suffix = " (EMULATED: a rehearsal, not a hardware result)" if data.emulated else ""
    if data.rehearsal:
        suffix = f" ({REHEARSAL_LABEL}: a rehearsal on real SGLang, not a hardware result)"
    if missing:
        return Verdict("INCOMPLETE", "not every requested stage ran" + suffix, missing)
    partial = [p for o in derived.values() for p in o.partial]
    if partial:
        return Verdict("WARN", f"{len(partial)} stage result(s) with failed requests" + suffix, partial)
    below = [w.text for w in warnings(data) if w.kind == "accuracy"]
    if below:
        return Verdict("WARN", f"{len(below)} accuracy result(s) below the published figure", below)
    starved = [w.text for w in warnings(data) if w.kind == "balance"]
    if starved:
        return Verdict("WARN", f"the router starved a server in {len(starved)} scenario(s)" + suffix, starved)
    regressions = [w.text for w in warnings(data) if w.kind == "regression"]
    if regressions and not data.emulated:
        return Verdict("WARN", f"{len(regressions)} regression(s) against published references", regressions)
    return Verdict("PASS", "every requested stage ran and every check passed" + suffix, [])
