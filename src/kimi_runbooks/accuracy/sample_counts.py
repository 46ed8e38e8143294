"""What a metric's n counts, so a reader can tell a judgement on 16 requests from one on 1 tool call.

Each tool's rows carry an n, but not its unit: the tool-call eval's schema_accuracy is over the tool
calls the model made (1, when it called a tool once in 16 requests), its F1 over the requests both it
and the reference answered; sgl-eval's pass@1 is over problems x repeats. The units follow the
writers: toolcall_eval.summary_metrics, toolcall_turns.multi_turn_metrics, sgl_eval.metric_rows,
inspect_eval.log_metrics.
"""

from __future__ import annotations

from .references import metric_family

COUNTS: dict[str, str] = {
    "success": "requests",
    "tool_calls_triggered": "requests",
    "finish_stop": "requests",
    "finish_others": "requests",
    "schema_valid": "tool calls made",
    "schema_accuracy": "tool calls made",
    "schema_errors": "tool calls made",
    "multi_turn_samples": "requests",
    "multi_turn_tool_calls_triggered": "multi-turn requests",
    "multi_turn_schema_accuracy": "multi-turn tool calls made",
    "multi_turn_kimi_ids": "multi-turn tool calls returned",
    "tool_call_f1": "requests compared with the reference run",
    "tool_call_precision": "requests with a tool call",
    "tool_call_recall": "requests the reference run called a tool on",
    "pass_at_1_avg*": "problems x repeats",
    "pass_at_*": "problems",
    "majority_at_*": "problems",
    "perfect_repeats": "repeats",
    "accuracy": "questions",
}
DEFAULT = "samples"


def n_counts(metric: str) -> str:
    """The unit of `metric`'s n ("tool calls made", "requests", ...); "samples" when not known."""
    return COUNTS.get(metric) or COUNTS.get(metric_family(metric)) or DEFAULT
