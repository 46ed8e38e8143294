"""Multi-turn samples in the K2-Vendor-Verifier-format tool-call eval.

A multi-turn sample is a request whose conversation already holds an assistant turn or a tool
result (agents send every request that way after the first). K2VV's totals count them like any
other sample; the summary adds ``single_turn`` (on a file without multi-turn samples, exactly the
totals) and ``multi_turn`` counts, the latter with how many returned calls carry SGLang's Kimi id
``functions.<name>:<tool calls already in the conversation + position>`` (serving_chat.py
``_process_tool_call_id``; Kimi's tool-call guidance asks for that global counter).
"""

from __future__ import annotations

from typing import Any


def is_multi_turn(request: Any) -> bool:
    """A request whose conversation already holds an assistant turn or a tool result."""
    messages = request.get("messages") or [] if isinstance(request, dict) else []
    return any(isinstance(m, dict) and m.get("role") in ("assistant", "tool") for m in messages)


def kimi_id_counts(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Calls returned, and those whose id is functions.<name>:<history count + position>."""
    calls = in_sequence = 0
    for r in rows:
        messages = (r.get("request") or {}).get("messages") or []
        history = sum(len(m.get("tool_calls") or []) for m in messages if m.get("role") == "assistant")
        choices = (r.get("response") or {}).get("choices") or [{}]
        for position, call in enumerate((choices[0].get("message") or {}).get("tool_calls") or []):
            calls += 1
            name = (call.get("function") or {}).get("name")
            in_sequence += call.get("id") == f"functions.{name}:{history + position}"
    return {"tool_calls_returned": calls, "kimi_ids_in_sequence": in_sequence}


def multi_turn_metrics(summary: dict[str, Any], total: int) -> list[dict[str, Any]]:
    """Metric rows for the multi-turn samples (none when the file has none)."""
    multi = summary.get("multi_turn")
    if not multi:
        return []
    n = multi["success_count"] + multi["failure_count"]
    triggered = multi["finish_tool_calls"]
    return [
        {"metric": "multi_turn_samples", "value": n, "n": total, "kind": "count"},
        {"metric": "multi_turn_tool_calls_triggered", "value": triggered, "n": n, "kind": "count"},
        {"metric": "multi_turn_schema_accuracy", "value": multi["schema_accuracy"], "n": triggered, "kind": "rate"},
        {
            "metric": "multi_turn_kimi_ids",
            "value": multi["kimi_ids_in_sequence"],
            "n": multi["tool_calls_returned"],
            "kind": "count",
        },
    ]
