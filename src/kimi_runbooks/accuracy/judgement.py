"""Is a suite's number below its published figure? The accuracy part of the run's verdict.

A suite is judged on its primary metric (pass@1 for aime25, accuracy for the multiple-choice and
OCR suites, schema accuracy for the tool-call evals) against the published figure it joins to
(``compare.compare``). The question is statistical: a smoke run of 2 AIME problems that scores
0/2 has a Wilson 95% interval of [0, 0.66], so it says nothing about a published 0.989 beyond
"below"; 0/30 says a lot more. So:

- ``within``: the run's interval reaches the reference's (or lies above it);
- ``below``: the run's whole interval lies under the reference's interval: WARN;
- ``fail``: even the top of the run's interval is more than ``fail_drop`` (a rate, set per
  reference file in params/references, ``fail_drop:``) under the published figure: FAIL;
- ``not comparable: emulated``: the emulator's answers test the pipeline, not the model, so an
  emulated run is never read as an accuracy loss;
- ``fail`` on a rehearsal (real SGLang serving a tiny random-weight model on the CPU): the suite ran
  through the real server, but a model that writes nonsense cannot reach a published figure, and the
  verdict says so rather than "ok";
- ``no reference`` / ``no interval``: nothing to judge against, or no sample count to size it.

A primary metric that cannot be computed is not a pass: a tool-call eval whose model never called a
tool has schema_accuracy over n=0 tool calls. Such a suite is judged on what it can show instead
(``FALLBACK``: the rate of tool calls triggered against the published rate), and says why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .references import SOURCE_EMULATED, SOURCE_REHEARSAL, compare, metric_family

#: reference suite -> the metrics (families) that carry its verdict, best first
PRIMARY: dict[str, tuple[str, ...]] = {
    "aime25": ("pass_at_1_avg*", "pass_at_1"),
    "gpqa-diamond": ("accuracy",),
    "ocrbench": ("accuracy",),
    "mmmu-pro": ("accuracy",),
    "gsm8k": ("accuracy",),
    "k2vv-toolcall": ("tool_call_f1", "schema_accuracy"),
}
FALLBACK: dict[str, tuple[str, ...]] = {
    "k2vv-toolcall": ("tool_calls_triggered",),
}
"""reference suite -> what judges it when none of its primary metrics has a value (no tool call made)"""
DEFAULT_FAIL_DROP = 0.10
"""Used when a reference file sets no ``fail_drop``."""
NEXT_STEP = (
    "rerun the suite with the published settings (published=True) and enough samples for a narrow "
    "interval; if it stays below, compare the checkpoint, its quantization, the chat template and the "
    "--reasoning-parser / --tool-call-parser flags with the reference's launch"
)


@dataclass(frozen=True)
class Judgement:
    suite: str
    metric: str
    status: str  # within, below, fail, not comparable: emulated, no reference, no interval
    text: str


def primary(suite: str, metric: str) -> bool:
    """Whether ``metric`` carries the verdict of (reference) suite ``suite``."""
    return any(metric_family(metric) == family or metric == family for family in PRIMARY.get(suite, ()))


def _f(value: Any) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def judge_row(row: pd.Series | dict[str, Any], fail_drop: float = DEFAULT_FAIL_DROP) -> Judgement:
    """The judgement of one row of ``compare.compare``."""
    suite, metric = str(row["suite"]), str(row["metric"])
    rate, hi = _f(row.get("rate")), _f(row.get("ci_high"))
    ref = _f(row.get("ref_rate"))
    head = f"accuracy suite {suite} {metric}"
    if ref is None:
        return Judgement(suite, metric, "no reference", f"{head}: no published figure to compare with")
    if row.get("source") == SOURCE_EMULATED:
        return Judgement(
            suite,
            metric,
            "not comparable: emulated",
            f"{head}: not comparable: emulated (the emulator's answers test the pipeline, not the model)",
        )
    if row.get("source") == SOURCE_REHEARSAL:
        shown = "no value" if rate is None else f"{rate:.3g}"
        return Judgement(
            suite,
            metric,
            "fail",
            f"{head} {shown} vs published {ref:.3g}: a tiny random-weight rehearsal model (real SGLang on the CPU) "
            "answers nonsense by design; the published figure needs the real checkpoint on the hardware",
        )
    if rate is None or hi is None:
        return Judgement(suite, metric, "no interval", f"{head} {rate} vs published {ref:.3g}: no sample count")
    ref_low = _f(row.get("ref_ci_low"))
    bar = ref if ref_low is None else ref_low
    n = _f(row.get("n"))
    said = f"{head} {rate:.3g} (95% interval up to {hi:.3g}, n={'?' if n is None else int(n)}) vs published {ref:.3g}"
    if hi < ref - fail_drop:
        return Judgement(
            suite, metric, "fail", f"{said}: below it by more than the allowed {fail_drop:.2g} (fail_drop)"
        )
    if hi < bar:
        return Judgement(suite, metric, "below", f"{said}: below it beyond the interval for this sample size")
    return Judgement(suite, metric, "within", f"{said}: consistent with it")


def _latest(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each suite's rows from its latest attempt (a rerun appends; earlier attempts stay)."""
    rows = list(rows)
    latest = {str(r.get("suite")): r.get("fingerprint") for r in rows}
    return [r for r in rows if r.get("fingerprint") == latest[str(r.get("suite"))]]


def _unjudgeable(judged: list[Judgement]) -> bool:
    """No primary metric of the suite could be judged for want of a value or a sample count."""
    return bool(judged) and all(j.status == "no interval" for j in judged)


def judge(rows: Sequence[dict[str, Any]], references: pd.DataFrame | None = None) -> list[Judgement]:
    """One judgement per primary metric of each suite's latest attempt; a suite none of whose primary
    metrics can be computed is judged on its ``FALLBACK`` metric, saying so."""
    table = compare(_latest(rows), references)
    if table.empty:
        return []
    by_suite: dict[str, list[Judgement]] = {}
    fallback_rows: dict[str, list[pd.Series]] = {}
    for _, row in table.iterrows():
        suite = str(row.get("ref_suite") or row["suite"])
        metric = str(row["metric"])
        if suite in FALLBACK and metric in FALLBACK[suite]:
            fallback_rows.setdefault(str(row["suite"]), []).append(row)
        if not primary(suite, metric) and not primary(str(row["suite"]), metric):
            continue
        drop = _f(row.get("fail_drop"))
        by_suite.setdefault(str(row["suite"]), []).append(judge_row(row, DEFAULT_FAIL_DROP if drop is None else drop))
    out: list[Judgement] = []
    for suite, judged in by_suite.items():
        if not _unjudgeable(judged) or suite not in fallback_rows:
            out += judged
            continue
        why = ", ".join(f"{j.metric} (n={_n_of(table, suite, j.metric)})" for j in judged)
        for row in fallback_rows[suite]:
            drop = _f(row.get("fail_drop"))
            j = judge_row(row, DEFAULT_FAIL_DROP if drop is None else drop)
            said = j.text.replace(f"accuracy suite {j.suite} ", f"accuracy suite {j.suite} judged on ", 1)
            out.append(Judgement(j.suite, j.metric, j.status, f"{said} (its primary metric cannot be computed: {why})"))
    return out


def _n_of(table: pd.DataFrame, suite: str, metric: str) -> int:
    row = table[(table["suite"] == suite) & (table["metric"] == metric)]
    n = _f(row["n"].iloc[0]) if len(row) else None
    return 0 if n is None else int(n)
