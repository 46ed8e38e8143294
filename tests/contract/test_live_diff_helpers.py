"""The live differential suite's own machinery, without servers: shapes, SSE framing, metric families,
and the judge that fails on an undeclared difference and reports declared ones that no longer occur."""

from __future__ import annotations

from typing import Any

import pytest
from live_diff import Declared, Difference, kinds_shapes, metric_families, read_sse, shape, shape_diff
from test_live_differential import DECLARED, judge


def test_shapes_differ_by_keys_and_types_not_values() -> None:
    a = {"id": "x", "choices": [{"n": 1, "t": None}], "usage": {"p": 3}}
    b = {"id": "y", "choices": [{"n": 2, "t": "s", "extra": True}], "usage": {"p": 3.5}}
    assert shape_diff(shape(a), shape(b)) == [
        ("$.choices[].extra", "<absent>", "bool"),
        ("$.choices[].t", "null", "str"),
        ("$.usage.p", "int", "float"),
    ]
    assert shape_diff(shape({"k": []}), shape({"k": [1]})) == []
    assert shape_diff(shape({"k": None}), shape({"k": {"a": 1}}), null_matches=True) == []


def test_sse_framing_and_chunk_kinds() -> None:
    good = 'data: {"choices":[{"delta":{"role":"assistant"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'
    sse = read_sse(good)
    assert sse.framing == [] and sse.payloads[-1] == "[DONE]"
    assert set(kinds_shapes(sse.payloads)) == {"role", "first", "last"}
    bad = read_sse('event: x\ndata: {"error": {}}\n\n')
    assert "last event is not data: [DONE]" in bad.framing and any("non-data line" in p for p in bad.framing)
    assert "error" in kinds_shapes(bad.payloads)


def test_metric_families_and_label_sets() -> None:
    text = (
        "# TYPE sglang:x gauge\n"
        'sglang:x{a="1",b="2"} 1.0\n'
        "# TYPE sglang:h histogram\n"
        'sglang:h_bucket{a="1",le="0.1"} 1.0\n'
        'sglang:h_sum{a="1"} 1.0\n'
    )
    assert metric_families(text) == {"sglang:x": {frozenset({"a", "b"})}, "sglang:h": {frozenset({"a"})}}


def test_judge_fails_on_an_undeclared_difference_and_reports_stale_entries(capsys: Any) -> None:
    recorded: list[tuple[str, Any]] = []
    declared = Difference("headers", "c", "x-emulated", "kimi-runbooks", "<absent>")
    judge("chat", [declared], lambda k, v: recorded.append((k, v)))
    assert recorded and recorded[0][0] == "summary" and "declared, seen" in recorded[0][1]
    with pytest.raises(AssertionError, match="UNDECLARED"):
        judge("chat", [Difference("chat", "c", "$.new", "str", "<absent>")], lambda k, v: None)
    judge("metrics", [], lambda k, v: None, headers=False)
    assert "NOT seen (stale, remove it): [metrics] names: sglang:is_emulated" in capsys.readouterr().out


def test_every_declared_entry_says_why() -> None:
    assert all(isinstance(e, Declared) and e.what and len(e.reason) > 20 for e in DECLARED)
