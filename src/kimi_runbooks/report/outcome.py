"""What a stage's results say about it: the one place a stage's status is derived from its work.

A notebook that ran to the end is not a stage that worked: the accuracy stage against a server
that died mid-stream finishes cleanly with 0 of 12 requests answered, and a tool-call eval whose
every call has malformed arguments finishes with schema_accuracy 0.0. So the runbook records, and
the report shows, the status the results give:

- failed: a unit of the stage's work failed (an invoke check, a speed scenario, an accuracy suite
  that errored, answered no request at all, whose tool calls never matched their schema, or whose
  figure lies past its published one's fail_drop: the report's FAIL and the stage record agree);
- degraded: the work ran but part of it failed (some requests of a suite errored);
- ok: nothing failed.

`report.verdict` lists every failure, so it can never say PASS while a failed count is above zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..accuracy.judgement import judge
from . import causes

TOOLCALL_SUITES = ("toolcall-builtin", "k2vv-toolcall")
REHEARSAL_FAILS = (
    "ran on a tiny random-weight rehearsal model (real SGLang on the CPU), which cannot reach a published figure"
)
SHOWN = 4
"""Failures named in a stage's one-line reason (all of them are in the verdict's reasons)."""


@dataclass(frozen=True)
class Outcome:
    status: str  # ok, degraded, failed
    reason: str = ""
    failures: list[str] = field(default_factory=list)
    partial: list[str] = field(default_factory=list)


def _outcome(failures: list[str], partial: list[str], units: int, unit: str, count: int | None = None) -> Outcome:
    """`failures` one per cause (count: the failed units they cover, when fewer lines than units)."""
    if failures:
        named = "; ".join(failures[:SHOWN]) + (f"; and {len(failures) - SHOWN} more" if len(failures) > SHOWN else "")
        failed = len(failures) if count is None else count
        return Outcome("failed", f"{failed} of {units} {unit} failed: {named}", failures, partial)
    if partial:
        return Outcome("degraded", "; ".join(partial[:SHOWN]), failures, partial)
    return Outcome("ok")


def invoke_outcome(results: Sequence[Any] | None) -> Outcome | None:
    """Any failed check fails the stage (a skipped check does not)."""
    if not results:
        return None
    failures = [f"invoke check {r.name} failed: {str(r.reason)[:200]}" for r in results if r.status == "fail"]
    return _outcome(failures, [], len(results), "checks")


def speed_outcome(frame: pd.DataFrame | None) -> Outcome | None:
    """Any failed scenario fails the stage (over-capacity and skipped ones are reported, not failed)."""
    if frame is None or frame.empty or "status" not in frame.columns:
        return None
    groups = causes.speed_failures(frame)  # one line per cause, naming its scenarios
    failures = [
        f"{causes.named(g, 'speed scenario')} failed" + (f": {g.example[:200]}" if g.example else "") for g in groups
    ]
    return _outcome(failures, [], len(frame), "scenarios", sum(len(g.names) for g in groups))


def _latest_per_suite(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each suite's rows from its latest attempt (a rerun appends; earlier attempts stay in the file)."""
    latest: dict[str, str | None] = {}
    for row in rows:
        latest[str(row.get("suite"))] = row.get("fingerprint")
    out: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        suite = str(row.get("suite"))
        if row.get("fingerprint") == latest[suite]:
            out.setdefault(suite, []).append(row)
    return out


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def suite_problems(suite: str, rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(failures, partial failures) of one suite's rows."""
    errors = [r for r in rows if r.get("status") == "error"]
    if errors:
        return [f"accuracy suite {suite} errored: {str(errors[0].get('detail') or '')[:200]}"], []
    metrics = {str(r.get("metric")): r for r in rows if r.get("status") == "ok"}
    failures: list[str] = []
    partial: list[str] = []
    success = metrics.get("success")
    if success is not None and suite in TOOLCALL_SUITES:
        done, total = _number(success.get("value")), _number(success.get("n"))
        if done is not None and total:
            failed = int(total - done)
            if done == 0:
                failures.append(f"accuracy suite {suite}: every request failed (0 of {int(total)} succeeded)")
            elif failed > total / 2:  # most of the work failed: the stage failed
                failures.append(f"accuracy suite {suite}: most requests failed ({failed} of {int(total)})")
            elif failed > 0:
                partial.append(f"accuracy suite {suite}: {failed} of {int(total)} requests failed")
    schema = metrics.get("schema_accuracy")
    if schema is not None and _number(schema.get("value")) == 0.0 and (_number(schema.get("n")) or 0) > 0:
        failures.append(
            f"accuracy suite {suite}: schema_accuracy 0.0 (none of {int(schema['n'])} tool calls had arguments "
            "that validate against the tool's schema)"
        )
    error_rate = metrics.get("error_rate")
    rate, n = (_number(error_rate.get("value")), _number(error_rate.get("n"))) if error_rate else (None, None)
    if rate is not None and rate >= 1.0:
        failures.append(f"accuracy suite {suite}: every request errored (error_rate 1.0 over {int(n or 0)})")
    elif rate is not None and rate > 0.5:
        failures.append(f"accuracy suite {suite}: most requests errored (error_rate {rate:.2g} over {int(n or 0)})")
    elif rate:
        partial.append(f"accuracy suite {suite}: error_rate {rate:.2g} over {int(n or 0)} requests")
    return failures, partial


def accuracy_outcome(rows: Sequence[dict[str, Any]] | None) -> Outcome | None:
    if not rows:
        return None
    suites = _latest_per_suite(rows)
    failures: list[str] = []
    partial: list[str] = []
    alike: dict[str, tuple[str, str, list[str]]] = {}  # cause -> (first text, its suite, suites)
    below_published = {j.suite: j.text for j in judge(rows) if j.status == "fail"}
    for suite, suite_rows in suites.items():
        f, p = suite_problems(suite, suite_rows)
        if not f and any(r.get("rehearsal") and r.get("status") == "ok" for r in suite_rows):
            f = [f"accuracy suite {suite}: {REHEARSAL_FAILS}"]
        elif not f and suite in below_published:
            f = [below_published[suite]]
        for text in f:  # suites failing alike (same error, numbers aside) read as one line
            first = alike.setdefault(causes.cause_key(text.replace(suite, "\0")), (text, suite, []))
            first[2].append(suite)
        partial += p
    for text, suite, names in alike.values():
        label = causes.named(causes.Group("", names), "accuracy suite")
        failures.append(text.replace(f"accuracy suite {suite}", label, 1))
    return _outcome(failures, partial, len(suites), "suites", sum(len(v[2]) for v in alike.values()))


def stage_outcomes(
    invoke: Sequence[Any] | None, speed: pd.DataFrame | None, accuracy: Sequence[dict[str, Any]] | None
) -> dict[str, Outcome]:
    """Outcome of each work stage that left results (deploy's is its notebook's)."""
    found = {"invoke": invoke_outcome(invoke), "speed": speed_outcome(speed), "accuracy": accuracy_outcome(accuracy)}
    return {name: o for name, o in found.items() if o is not None}
