"""Time to first answer token and end-to-end latency per request under the scenario's own load.

bench_serving's TTFT is the time to the first streamed token of any kind; a thinking model streams
its reasoning first (``delta.reasoning_content``), so what a user waits for before the answer starts
is longer. The bench worker notes, for every request bench_serving sends, when its first reasoning
token and its first answer token (``delta.content``) arrived and its end-to-end latency
(tools/scripts/bench_worker.py `_time_answers`), and writes one record per request, warm-up
included, beside the scenario's output (`timings_path`). Records are matched to the measured requests
by their TTFT, the same float bench_serving writes in its --output-details `ttfts` (a perf_counter
difference: two requests never share one), so they keep bench_serving's order: a multi-turn trace's
outputs come conversation by conversation, round by round, and the per-turn figures group them as
speed.traces.per_turn does.

Percentiles are numpy's (linear), as bench_serving computes its own, each with the number of
requests it is taken over. A request whose reasoning used up its output tokens has no answer time:
it is counted (`no_answer`), not averaged in. Only a chat backend tells reasoning from answer; the
other backends' rows have end-to-end figures and say why they have no answer time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..rundir import read_jsonl

CHAT_BACKENDS = ("sglang-oai-chat", "vllm-chat", "lmdeploy-chat")
PERCENTILES = (50, 90, 99)
SOURCE = "per request under the scenario's load (bench worker)"
NOT_TIMED = (
    "not timed per request: bench_serving ran as its own process (a command prefix, or no bench worker), "
    "and only the bench worker times each request's first answer token"
)


def timings_path(output_file: Path) -> Path:
    """Where the bench worker writes a scenario's per-request timings (beside its bench_serving output)."""
    return output_file.with_suffix(".requests.jsonl")


def read_timings(path: Path) -> list[dict[str, Any]] | None:
    """The worker's records, or None when it wrote none (no worker, an older worker script)."""
    return read_jsonl(path) if path.is_file() else None


def in_output_order(raw: dict[str, Any], records: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """One record (or None) per measured request, in bench_serving's output order (see module doc)."""
    by_ttft: dict[float, dict[str, Any]] = {}
    for r in records:
        ttft = r.get("ttft")
        if r.get("success") and isinstance(ttft, (int, float)) and ttft > 0:
            by_ttft[float(ttft)] = r
    ttfts: Sequence[Any] = raw.get("ttfts") or []
    return [by_ttft.get(float(t)) if isinstance(t, (int, float)) and t > 0 else None for t in ttfts]


def _ms(values: list[float]) -> dict[int, float]:
    return {p: round(float(np.percentile(values, p)) * 1000.0, 3) for p in PERCENTILES} if values else {}


def _figures(matched: list[dict[str, Any]]) -> dict[str, Any]:
    """p50/p90/p99 of first reasoning, first answer and end-to-end (ms), with the counts behind them."""
    answer = [float(r["first_answer"]) for r in matched if isinstance(r.get("first_answer"), (int, float))]
    reasoning = [float(r["first_reasoning"]) for r in matched if isinstance(r.get("first_reasoning"), (int, float))]
    e2e = [float(r["latency"]) for r in matched if isinstance(r.get("latency"), (int, float))]
    out: dict[str, Any] = {"requests": len(matched), "answered": len(answer), "no_answer": len(matched) - len(answer)}
    for name, values in (("first_answer", answer), ("first_reasoning", reasoning), ("e2e_latency", e2e)):
        for p, value in _ms(values).items():
            out[f"{'median' if p == 50 else f'p{p}'}_{name}_ms"] = value
    return out


def turn_indices(trace: dict[str, Any] | None, count: int) -> list[int] | None:
    """The turn of each output of an agentic trace replay, in output order (speed.traces.per_turn's)."""
    if not isinstance(trace, dict) or not isinstance(trace.get("conversations"), list):
        return None
    turns: list[int] = []
    for conversation in trace["conversations"]:
        turns += list(range(len(conversation)))
    return turns[:count]


def answer_latency(
    backend: str | None, raw: dict[str, Any], records: list[dict[str, Any]] | None, trace: Any = None
) -> dict[str, Any]:
    """What a scenario's row gains: `answer_latency` (figures, counts, source), the p50/p90/p99 time
    to first answer token as columns, and per-turn figures merged into `turns` for a trace. Only a note
    when the worker wrote no timings (the streaming probe then stands in, speed/answer_probe.py). `backend` is
    the one bench_serving ran with (its --backend)."""
    if records is None:
        return {"answer_latency": {"note": NOT_TIMED}}
    ordered = in_output_order(raw, records)
    matched = [r for r in ordered if r is not None]
    summary = {**_figures(matched), "source": SOURCE, "unmatched": len(ordered) - len(matched)}
    if backend not in CHAT_BACKENDS:
        summary["no_answer_reason"] = (
            f"backend {backend} streams text without telling reasoning from answer; "
            "only a chat backend (sglang-oai-chat) separates them"
        )
        for key in [k for k in summary if "first_answer" in k or "first_reasoning" in k]:
            summary.pop(key)
    out: dict[str, Any] = {"answer_latency": summary}
    out.update({k: v for k, v in summary.items() if k.endswith("_ms") and "e2e" not in k})
    if "median_first_answer_ms" in out:
        out["first_answer_from"] = f"{summary['answered']} of {summary['requests']} requests under load"
    turns = turn_indices(trace, len(ordered))
    if turns is not None:
        groups: dict[int, list[dict[str, Any]]] = {}
        for turn, record in zip(turns, ordered, strict=False):
            if record is not None:
                groups.setdefault(turn, []).append(record)
        summary["turns"] = [{"turn": k, **_figures(v)} for k, v in sorted(groups.items())]
    return out


def merge_turns(turns: Any, answer: dict[str, Any]) -> Any:
    """A trace row's per-turn figures (speed.traces.per_turn) with each turn's answer figures beside them."""
    found = {t["turn"]: t for t in (answer.get("answer_latency") or {}).get("turns") or []}
    if not isinstance(turns, list) or not found:
        return turns
    keys = ("median_first_answer_ms", "p90_first_answer_ms", "median_e2e_latency_ms", "p90_e2e_latency_ms")
    merged = []
    for t in turns:
        extra = found.get(t.get("turn")) if isinstance(t, dict) else None
        merged.append({**t, **{k: extra[k] for k in keys if k in extra}, "answered": extra["answered"]} if extra else t)
    return merged
