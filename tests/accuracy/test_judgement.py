"""Judging a suite against its published figure when its primary metric cannot be computed."""

from __future__ import annotations

from kimi_runbooks.accuracy import EvalRow
from kimi_runbooks.accuracy.judgement import judge
from kimi_runbooks.report.outcome import accuracy_outcome


def _toolcall_rows(triggered: int, total: int = 12, suite: str = "k2vv-toolcall") -> list[dict]:
    """A tool-call eval's rows as toolcall_eval.summary_metrics writes them."""
    settings = {"reference_suite": "k2vv-toolcall", "model": "kimi-k2.6"}
    rows = [
        EvalRow(suite=suite, metric="success", value=total, n=total, kind="count", settings=settings),
        EvalRow(suite=suite, metric="tool_calls_triggered", value=triggered, n=total, kind="count", settings=settings),
        EvalRow(
            suite=suite,
            metric="schema_accuracy",
            value=1.0 if triggered else None,
            n=triggered,
            kind="rate",
            settings=settings,
        ),
    ]
    return [r.model_dump() for r in rows]


def test_a_model_that_never_calls_a_tool_is_judged_on_calls_triggered():
    """Issue 40: no tool call at all left schema_accuracy at n=0, 'not judged', and the stage 'ok'."""
    rows = _toolcall_rows(triggered=0)
    judged = judge(rows)
    assert [(j.metric, j.status) for j in judged] == [("tool_calls_triggered", "fail")]
    text = judged[0].text
    assert "judged on tool_calls_triggered" in text and "vs published 0.485" in text
    assert "cannot be computed: schema_accuracy (n=0)" in text
    outcome = accuracy_outcome(rows)
    assert outcome is not None and outcome.status == "failed"  # the stage record agrees with the report
    assert "tool_calls_triggered" in outcome.reason


def test_a_suite_with_its_primary_metric_is_judged_on_it_alone():
    rows = _toolcall_rows(triggered=6)
    judged = judge(rows)
    assert [(j.metric, j.status) for j in judged] == [("schema_accuracy", "within")]
    assert accuracy_outcome(rows).status == "ok"


def test_the_builtin_suite_falls_back_through_its_reference_suite():
    judged = judge(_toolcall_rows(triggered=0, suite="toolcall-builtin"))
    assert [(j.suite, j.metric, j.status) for j in judged] == [("toolcall-builtin", "tool_calls_triggered", "fail")]


def test_an_emulated_suite_is_never_failed_by_the_fallback():
    rows = [dict(r, emulated=True, source="emulated") for r in _toolcall_rows(triggered=0)]
    assert accuracy_outcome(rows).status == "ok"
