"""Built-in tool-call conformance eval in K2-Vendor-Verifier's formats.

K2-Vendor-Verifier (MoonshotAI, git repo, not a package) sends each line of ``samples.jsonl``
(a full chat-completions request) to the server, writes one result line per request
(``data_index, request, response, status, finish_reason, tool_calls_valid, duration_ms``) and a
``summary.json`` with ``success_count, failure_count, finish_stop, finish_tool_calls,
finish_others, schema_validation_error_count, successful_tool_call_count``. This module does the
same with the same definitions, so its files are interchangeable with the tool's, and adds the
"ToolCall-Trigger Similarity" F1 the tool's README defines but its script does not compute.

Multi-turn samples count in those totals as K2VV counts them; the summary also splits them out
(``single_turn`` / ``multi_turn``, toolcall_turns.py).

Resumable: results are appended as they finish; a rerun skips data_index values that already
succeeded (like the tool's ``--incremental``) and re-sends failed ones; the newest line wins.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from tqdm import tqdm

from ..rundir import RunFolder, read_jsonl
from .toolcall_turns import is_multi_turn, kimi_id_counts, multi_turn_metrics

T = TypeVar("T")

SUMMARY_KEYS = (
    "success_count",
    "failure_count",
    "finish_stop",
    "finish_tool_calls",
    "finish_others",
    "schema_validation_error_count",
    "successful_tool_call_count",
)


@dataclass(frozen=True)
class Sample:
    """One request of samples.jsonl; data_index is the 1-based line number, as in K2VV."""

    data_index: int
    request: dict[str, Any]


def load_samples(path: str | Path, *, model: str | None = None, limit: int | None = None) -> list[Sample]:
    """Read samples.jsonl the way K2VV does: role "_input" becomes "system", model is replaced."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(
            f"tool-call samples file {p} not found. Fix: pass the official file "
            "(K2-Vendor-Verifier checkout: tool-calls/samples.jsonl, from the tool-calls.tar.gz the "
            "README links) or write the small CI set with write_ci_samples(path)."
        )
    samples = []
    for line_num, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}:{line_num} is not JSON ({exc}); every line must be one request") from None
        req = copy.deepcopy(raw)
        for message in req.get("messages", []):
            if message.get("role") == "_input":
                message["role"] = "system"
        if model:
            req["model"] = model
        samples.append(Sample(line_num, req))
        if limit is not None and len(samples) >= limit:
            break
    return samples


# --------------------------------------------------------------------------- validation + summary


def validate_tool_call(tool_call: dict[str, Any], tools: list[dict[str, Any]]) -> bool:
    """K2VV's rule: the named tool exists, its arguments are JSON, and they satisfy its schema."""
    from jsonschema import ValidationError, validate  # ~0.8 s to import: only when a call is checked
    from jsonschema.exceptions import SchemaError

    try:
        name = tool_call["function"]["name"]
        schema = next((t["function"]["parameters"] for t in tools if t["function"]["name"] == name), None)
        if not schema:
            return False
        args = tool_call["function"]["arguments"]
        if isinstance(args, str):
            args = json.loads(args)
        validate(instance=args, schema=schema)
        return True
    except (json.JSONDecodeError, ValidationError, SchemaError, KeyError, TypeError):
        return False


def tool_calls_valid(request: dict[str, Any], response: dict[str, Any] | None) -> tuple[str | None, bool | None]:
    """(finish_reason, tool_calls_valid) of one response; valid is None unless tool_calls finished it."""
    if not response or "choices" not in response or not response["choices"]:
        return None, None
    choice = response["choices"][0]
    finish = choice.get("finish_reason")
    if finish != "tool_calls":
        return finish, None
    calls = (choice.get("message") or {}).get("tool_calls") or []
    return finish, all(validate_tool_call(tc, request.get("tools", [])) for tc in calls)


def latest_by_index(results: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per data_index, the newest line winning (a resumed run appends re-sends)."""
    latest: dict[int, dict[str, Any]] = {}
    for r in results:
        latest[int(r["data_index"])] = r
    return [latest[k] for k in sorted(latest)]


def summarize(results: Iterable[dict[str, Any]], model: str | None = None) -> dict[str, Any]:
    """summary.json as K2VV's compute_summary builds it (one result per data_index), plus the split by turns."""
    rows = latest_by_index(results)
    summary: dict[str, Any] = {"model": model, **_counts(rows)}
    single = [r for r in rows if not is_multi_turn(r.get("request"))]
    multi = [r for r in rows if is_multi_turn(r.get("request"))]
    if multi:
        summary["single_turn"] = _counts(single)
        summary["multi_turn"] = {**_counts(multi), **kimi_id_counts(multi)}
    return summary


def _counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    counts: dict[str, Any] = {**{k: 0 for k in SUMMARY_KEYS}, "finish_others_detail": {}}
    for r in rows:
        counts["success_count" if r.get("status") == "success" else "failure_count"] += 1
        finish = r.get("finish_reason")
        if finish == "stop":
            counts["finish_stop"] += 1
        elif finish == "tool_calls":
            counts["finish_tool_calls"] += 1
            if r.get("tool_calls_valid"):
                counts["successful_tool_call_count"] += 1
            else:
                counts["schema_validation_error_count"] += 1
        elif finish:
            counts["finish_others"] += 1
            detail = counts["finish_others_detail"]
            detail[finish] = detail.get(finish, 0) + 1
    triggered = counts["finish_tool_calls"]
    counts["schema_accuracy"] = counts["successful_tool_call_count"] / triggered if triggered else None
    return counts


def trigger_f1(results: Iterable[dict[str, Any]], reference: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """ToolCall-Trigger Similarity (K2VV README): positive = finish_reason == "tool_calls".

    Joined on data_index; precision = TP/(TP+FP), recall = TP/(TP+FN), f1 their harmonic mean.
    Rows present in only one file are counted in ``unmatched`` and left out.
    """
    ours = {r["data_index"]: r.get("finish_reason") == "tool_calls" for r in latest_by_index(results)}
    theirs = {r["data_index"]: r.get("finish_reason") == "tool_calls" for r in latest_by_index(reference)}
    common = sorted(set(ours) & set(theirs))
    tp = sum(ours[i] and theirs[i] for i in common)
    fp = sum(ours[i] and not theirs[i] for i in common)
    fn = sum(not ours[i] and theirs[i] for i in common)
    tn = sum(not ours[i] and not theirs[i] for i in common)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    if tp + fp + fn == 0:
        f1 = None  # neither side ever triggered a tool call: F1 is undefined, not 0
    elif precision and recall:
        f1 = 2 * precision * recall / (precision + recall)
    else:
        f1 = 0.0
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "n": len(common),
        "unmatched": len(set(ours) ^ set(theirs)),
        "tool_call_precision": precision,
        "tool_call_recall": recall,
        "tool_call_f1": f1,
    }


def read_results(path: str | Path) -> list[dict[str, Any]]:
    """A K2VV results JSONL (ours or the tool's); a torn last line is skipped."""
    rows = read_jsonl(path)
    missing = [k for k in ("data_index", "status", "finish_reason") if rows and k not in rows[0]]
    if missing:
        raise ValueError(f"{path} is not a K2-Vendor-Verifier results file (no {', '.join(missing)} field)")
    return rows


def read_summary(path: str | Path) -> dict[str, Any]:
    data = json.loads(Path(path).read_text())
    missing = [k for k in SUMMARY_KEYS if k not in data]
    if missing:
        raise ValueError(f"{path} is not a K2-Vendor-Verifier summary (missing {', '.join(missing)})")
    summary: dict[str, Any] = data
    return summary


# --------------------------------------------------------------------------- sending


async def _send(client: Any, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(status, response dict) for one request; a stream is folded into a chat.completion."""
    try:
        if not request.get("stream"):
            response = await client.chat.completions.create(**request)
            return "success", response.model_dump()
        stream = await client.chat.completions.create(**request)
        rid = created = finish = usage = None
        content: list[str] = []
        reasoning: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        async for event in stream:
            rid = getattr(event, "id", None) or rid
            created = getattr(event, "created", None) or created
            if getattr(event, "usage", None):
                usage = event.usage.model_dump()
            if not event.choices:
                continue
            choice = event.choices[0]
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    content.append(delta.content)
                extra = getattr(delta, "reasoning_content", None) or (delta.model_extra or {}).get("reasoning_content")
                if extra:
                    reasoning.append(extra)
                for tc in delta.tool_calls or []:
                    idx = tc.index if tc.index is not None else 0
                    slot = calls.setdefault(
                        idx, {"id": tc.id, "type": tc.type or "function", "function": {"name": "", "arguments": ""}}
                    )
                    slot["id"] = slot["id"] or tc.id
                    if tc.function is not None:
                        if tc.function.name:
                            slot["function"]["name"] = tc.function.name
                        if tc.function.arguments:
                            slot["function"]["arguments"] += tc.function.arguments
            finish = choice.finish_reason or finish
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(content),
            "tool_calls": [calls[i] for i in sorted(calls)] or None,
        }
        if reasoning:
            message["reasoning_content"] = "".join(reasoning)
        return "success", {
            "id": rid,
            "object": "chat.completion",
            "created": created,
            "model": request.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": finish or "stop"}],
            "usage": usage,
        }
    except Exception as exc:  # noqa: BLE001 - every failure is a "failed" row, as in K2VV
        return "failed", {"error": f"{type(exc).__name__}: {exc}"}


def _run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code, also inside Jupyter (whose loop is already running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(factory())
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="toolcall-eval")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


@dataclass
class ToolcallRun:
    """Where a built-in run wrote its files, and its summary."""

    results_path: Path
    summary_path: Path
    summary: dict[str, Any]
    sent: int
    skipped: int
    duration_s: float
    f1: dict[str, Any] | None = None


@dataclass(frozen=True)
class ToolcallServer:
    """The server the samples go to: ``base_url`` is the OpenAI base (ending in /v1)."""

    base_url: str
    model: str
    api_key: str = "EMPTY"
    api_key_env: str | None = None


@dataclass(frozen=True)
class ToolcallRequests:
    """How the samples are sent. temperature / max_tokens override each request's own, as K2VV's
    ``--temperature`` / ``--max-tokens`` do; None keeps the request's. limit: the first N samples."""

    concurrency: int = 256
    temperature: float | None = 1.0
    max_tokens: int | None = 64000
    limit: int | None = None
    timeout: float = 600.0
    max_retries: int = 3


def run_toolcall_eval(
    samples_path: str | Path,
    server: ToolcallServer,
    results_path: str | Path,
    requests: ToolcallRequests = ToolcallRequests(),
    *,
    summary_path: str | Path | None = None,
    reference_path: str | Path | None = None,
    folder: RunFolder | None = None,
) -> ToolcallRun:
    """Send samples concurrently (bounded), append result lines as they finish, write summary.json."""
    from openai import AsyncOpenAI

    model, api_key, base_url = server.model, server.api_key, server.base_url
    concurrency, temperature, max_tokens = requests.concurrency, requests.temperature, requests.max_tokens
    limit, timeout, max_retries = requests.limit, requests.timeout, requests.max_retries

    results_path = Path(results_path)
    folder = folder or RunFolder(results_path.parent, [server.api_key_env])
    summary_path = Path(summary_path) if summary_path else results_path.with_name(RunFolder.TOOL_SUMMARY)
    samples = load_samples(samples_path, model=model, limit=limit)
    for s in samples:
        if temperature is not None:
            s.request["temperature"] = temperature
        if max_tokens is not None:
            s.request["max_tokens"] = max_tokens
    done = {int(r["data_index"]) for r in read_jsonl(results_path) if r.get("status") == "success"}
    todo = [s for s in samples if s.data_index not in done]
    start = time.monotonic()

    async def main() -> None:
        client = AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=max_retries)
        sem = asyncio.Semaphore(max(1, concurrency))

        async def one(sample: Sample) -> dict[str, Any]:
            async with sem:
                t0 = time.time()
                status, response = await _send(client, sample.request)
                finish, valid = tool_calls_valid(sample.request, response)
                return {
                    "data_index": sample.data_index,
                    "request": sample.request,
                    "response": response,
                    "status": status,
                    "finish_reason": finish,
                    "tool_calls_valid": valid,
                    "last_run_at": datetime.now().isoformat(),
                    "duration_ms": int((time.time() - t0) * 1000),
                }

        try:
            with tqdm(total=len(todo), desc="toolcall-builtin", unit="req") as bar:
                for fut in asyncio.as_completed([one(s) for s in todo]):
                    row = await fut
                    folder.append_jsonl(results_path, row)
                    bar.update(1)
        finally:
            await client.close()

    if todo:
        _run_sync(main)
    wanted = {s.data_index for s in samples}
    results = [r for r in read_results(results_path) if int(r["data_index"]) in wanted]
    summary = summarize(results, model=model)
    folder.save_json(summary_path, summary)
    f1 = trigger_f1(results, read_results(reference_path)) if reference_path else None
    return ToolcallRun(
        results_path, summary_path, summary, len(todo), len(samples) - len(todo), time.monotonic() - start, f1
    )


# --------------------------------------------------------------------------- rows


def summary_metrics(summary: dict[str, Any], f1: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Summary -> metrics named as in params/references (suite k2vv-toolcall), with their n."""
    total = summary["success_count"] + summary["failure_count"]
    triggered = summary["finish_tool_calls"]
    out = [
        {"metric": "success", "value": summary["success_count"], "n": total, "kind": "count"},
        {"metric": "tool_calls_triggered", "value": triggered, "n": total, "kind": "count"},
        {"metric": "schema_valid", "value": summary["successful_tool_call_count"], "n": triggered, "kind": "count"},
        {"metric": "schema_accuracy", "value": summary.get("schema_accuracy"), "n": triggered, "kind": "rate"},
        {"metric": "schema_errors", "value": summary["schema_validation_error_count"], "n": triggered, "kind": "count"},
        {"metric": "finish_stop", "value": summary["finish_stop"], "n": total, "kind": "count"},
        {"metric": "finish_others", "value": summary["finish_others"], "n": total, "kind": "count"},
    ]
    out += multi_turn_metrics(summary, total)  # none without multi-turn samples; the rows above: all samples
    if f1 is not None:
        out += [
            {"metric": "tool_call_f1", "value": f1["tool_call_f1"], "n": f1["n"], "kind": "rate"},
            {
                "metric": "tool_call_precision",
                "value": f1["tool_call_precision"],
                "n": f1["tp"] + f1["fp"],
                "kind": "rate",
            },
            {"metric": "tool_call_recall", "value": f1["tool_call_recall"], "n": f1["tp"] + f1["fn"], "kind": "rate"},
        ]
    return out
