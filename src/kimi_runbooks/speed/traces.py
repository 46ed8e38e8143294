"""Agentic traces for bench_serving's ``--dataset-name agentic-trace`` (and ``mooncake``): made, checked, read back.

The format is SGLang 0.5.23's (sgl-project/sglang, python/sglang/benchmark/datasets/agentic_trace.py):
``{"metadata": {...}, "conversations": [[{"messages": [...], "prompt_tokens": N}, ...], ...]}``, each
turn holding only the new non-assistant messages; bench_serving replays a conversation round by
round with the chat backend, appending the server's real reply (reasoning + content) as the
assistant message before the next round (benchmark/serving.py ``wrap_multi_turn_request_func``),
so the context grows turn by turn and every round's prompt starts with the previous one.

``agentic_trace`` generates one shaped like a coding agent's session (OpenHands / SWE-smith): a
system prompt shared by every conversation (the tool and repository instructions), a task, then
tens of turns of tool output, the context growing toward the plan's context length. Text is drawn
from single-token words, so a turn of N words is N tokens in the emulator's tokenizer (about N in
others). ``designed_hit_rate`` is the share of prompt tokens the trace designs to be a cached
prefix: every later turn repeats the whole previous prompt, and a conversation that starts after
the first wave (``max_concurrency``) finds the shared system prompt cached. The server's replies
are not counted as cacheable: a reasoning model's raw output (``<think>...``) is not what the next
prompt re-renders.

``mooncake_trace`` writes the ``mooncake`` dataset's JSONL (timestamp ms, input_length,
output_length, hash_ids: benchmark/datasets/mooncake.py): sessions sharing leading hash ids share
a prompt prefix, since bench_serving builds each prompt from its hash ids.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from ..catalog import Scenario, TraceDesign
from ..rundir import RunFolder
from .arrivals import is_constant, prepare_constant
from .sessions import mooncake_sessions, planned_think_s, read_mooncake, session_replay, with_think_time

WORDS = (
    "the code file test function class value error return import module change line patch build run check "
    "type list name data path config output input result issue fix update method call state cache request "
    "server model token debug trace object string number index parse read write open close branch commit "
    "merge review diff source target layer stage report figure table note step plan"
).split()
"""Each is one token with its leading space in the emulator's tokenizer (SmolLM2's BPE) and in GPT-style BPEs."""
FORMAT = "agentic-trace (sglang 0.5.23 benchmark/datasets/agentic_trace.py)"
TEMPLATE_TOKENS_PER_MESSAGE = 5
"""Chat-template tokens around one message (role markers and newlines) in the estimate of prompt_tokens."""


class TraceError(ValueError):
    """A trace file bench_serving cannot replay; the message names the rule and the fix."""


def _text(rng: random.Random, tokens: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(tokens, 1)))


def turn_sizes(design: TraceDesign) -> list[int]:
    """Tokens each turn adds (turn 0: the task), stopping where the context would pass the limit."""
    sizes, context = [design.first_tokens], design.system_tokens + design.first_tokens
    for _ in range(1, design.turns):
        step = design.turn_tokens + design.output_len + 2 * TEMPLATE_TOKENS_PER_MESSAGE
        if design.context_length and context + step + design.output_len > design.context_length:
            break
        context += step
        sizes.append(design.turn_tokens)
    return sizes


def agentic_trace(design: TraceDesign, seed: int = 0) -> dict[str, Any]:
    """A synthetic agentic trace in bench_serving's format (see the module docstring)."""
    rng = random.Random(seed)
    system = "You are a coding agent. Tools and repository rules follow." + " " + _text(rng, design.system_tokens)
    conversations = []
    sizes = turn_sizes(design)
    for conv in range(design.conversations):
        own = system if design.shared_system else f"Session {conv}. " + system
        turns, context = [], design.system_tokens + TEMPLATE_TOKENS_PER_MESSAGE
        for k, size in enumerate(sizes):
            if k == 0:
                messages = [
                    {"role": "system", "content": own},
                    {"role": "user", "content": f"Task {conv}: " + _text(rng, size)},
                ]
            else:
                messages = [{"role": "user", "content": f"Observation {k}: " + _text(rng, size)}]
                context += design.output_len + TEMPLATE_TOKENS_PER_MESSAGE
            context += size + TEMPLATE_TOKENS_PER_MESSAGE
            turns.append({"messages": messages, "prompt_tokens": context})
        conversations.append(turns)
    metadata = {
        "format": FORMAT,
        "generator": "kimi_runbooks.speed.traces.agentic_trace",
        "design": design.model_dump(),
        "seed": seed,
        "turns_per_conversation": len(sizes),
        "max_prompt_tokens": conversations[0][-1]["prompt_tokens"] if conversations else 0,
    }
    return {"metadata": metadata, "conversations": conversations}


def designed_hit_rate(trace: dict[str, Any], max_concurrency: int | None, max_turns: int | None = None) -> float:
    """The share of prompt tokens the trace makes a cached prefix when replayed at this concurrency
    (prompt_tokens as the trace states them; see the module docstring for what counts)."""
    wave = max(max_concurrency or 1, 1)
    cached = total = 0
    system_seen = False
    for index, conversation in enumerate(trace["conversations"]):
        turns = conversation[:max_turns] if max_turns else conversation
        previous = 0
        for k, turn in enumerate(turns):
            prompt = int(turn["prompt_tokens"])
            total += prompt
            if k == 0:
                system = _system_tokens(turn)
                shared = trace.get("metadata", {}).get("design", {}).get("shared_system", True)
                if shared and system_seen and index >= wave:
                    cached += system
                system_seen = True
            else:
                cached += previous
            previous = prompt
    return cached / total if total else 0.0


def _system_tokens(turn: dict[str, Any]) -> int:
    system = [m for m in turn["messages"] if m.get("role") == "system"]
    return sum(len(str(m.get("content", "")).split()) + TEMPLATE_TOKENS_PER_MESSAGE for m in system)


def check_trace(doc: Any, where: str) -> dict[str, Any]:
    """A trace document as bench_serving's loader and multi-turn replay need it, or TraceError."""
    fix = "Fix: write {'conversations': [[{'messages': [{'role': 'user', 'content': '...'}]}, ...], ...]}"
    if not isinstance(doc, dict) or not isinstance(doc.get("conversations"), list) or not doc["conversations"]:
        raise TraceError(f"{where}: a trace needs a non-empty 'conversations' list at its top level. {fix}")
    for i, conversation in enumerate(doc["conversations"]):
        if not isinstance(conversation, list) or not conversation:
            raise TraceError(f"{where}: conversations[{i}] must be a non-empty list of turns. {fix}")
        for k, turn in enumerate(conversation):
            at = f"{where}: conversations[{i}][{k}]"
            messages = turn.get("messages") if isinstance(turn, dict) else None
            if not isinstance(messages, list) or not messages:
                raise TraceError(f"{at} needs a non-empty 'messages' list (the turn's new messages). {fix}")
            for m, message in enumerate(messages):
                if not (isinstance(message, dict) and isinstance(message.get("role"), str) and "content" in message):
                    raise TraceError(
                        f"{at}.messages[{m}]: every message needs 'role' and 'content' (bench_serving's "
                        "multi-turn replay refuses a round otherwise: _normalize_round_messages). " + fix
                    )
                if message["role"] == "assistant":
                    raise TraceError(
                        f"{at}.messages[{m}]: a turn holds only new non-assistant messages; bench_serving "
                        "appends the server's real reply itself. Fix: drop the assistant messages."
                    )
            if "prompt_tokens" in turn and not isinstance(turn["prompt_tokens"], int):
                raise TraceError(f"{at}.prompt_tokens must be an integer token count. Fix: a number, or leave it out.")
    return doc


def load_trace(path: str | Path) -> dict[str, Any]:
    """A user's trace file, checked (check_trace); a missing or non-JSON file is a TraceError too."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TraceError(f"trace file {p} does not exist. Fix: pass the path of an agentic-trace JSON file.") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TraceError(
            f"trace file {p} is not JSON ({exc}). Fix: an agentic-trace file is one JSON object."
        ) from None
    return check_trace(doc, str(p))


def mooncake_trace(
    design: TraceDesign, seed: int = 0, block_tokens: int = 130, gap_ms: int = 200
) -> list[dict[str, Any]]:
    """``mooncake`` JSONL rows: one session per conversation, ``shared`` leading hash ids common to all
    (the shared system prompt), then ids of its own; bench_serving makes ~``block_tokens`` tokens
    of prompt per hash id ("<id>" + 128 x " hi"). With ``design.turns`` > 1 a session is that many
    rows sharing a ``session_id`` (AIPerf's multi-turn mooncake format), each round's hash ids the
    previous round's plus its own, its first round timestamped (speed/sessions.py replays them)."""
    rng = random.Random(seed)
    shared = max(design.system_tokens // block_tokens, 1)
    own = max((design.first_tokens + design.turn_tokens) // block_tokens, 1)
    rounds = len(turn_sizes(design)) if design.turns > 1 else 1
    step = max(-(-design.turn_tokens // block_tokens), 1)  # new blocks per later round
    span = own + (rounds - 1) * step
    rows = []
    for conv in range(design.conversations):
        ids = list(range(shared)) + [1000 + conv * span + j for j in range(own)]
        for k in range(rounds):
            if k:
                ids = ids + [1000 + conv * span + own + (k - 1) * step + j for j in range(step)]
            row: dict[str, Any] = {}
            if rounds > 1:
                row["session_id"] = f"s{conv}"
            if k == 0:
                row["timestamp"] = conv * gap_ms + rng.randrange(gap_ms // 4 + 1)
            row.update(
                input_length=len(ids) * block_tokens + k * design.output_len,  # the prompt carries the replies
                output_length=design.output_len,
                hash_ids=list(ids),
            )
            rows.append(row)
    return rows


def per_turn(raw: dict[str, Any], trace: dict[str, Any], max_turns: int | None = None) -> list[dict[str, Any]]:
    """Per-turn figures from bench_serving's --output-details arrays (outputs come conversation by
    conversation, round by round): median TTFT, mean context, cache hit rate, tok/s per user."""
    lens: Sequence[Any] = raw.get("input_lens") or []
    ttfts: Sequence[Any] = raw.get("ttfts") or []
    itls: Sequence[Any] = raw.get("itls") or []
    cached: Sequence[Any] = raw.get("cached_tokens") or []
    errors: Sequence[Any] = raw.get("errors") or []
    rounds: dict[int, list[int]] = {}
    at = 0
    for conversation in trace["conversations"][: len(ttfts)]:
        for k in range(len(conversation[:max_turns] if max_turns else conversation)):
            rounds.setdefault(k, []).append(at)
            at += 1
    out = []
    for k, indices in sorted(rounds.items()):
        ok = [i for i in indices if i < len(ttfts) and not (i < len(errors) and errors[i])]
        if not ok:
            continue
        prompt = sum(int(lens[i]) for i in ok if i < len(lens))
        hits = sum(int(cached[i]) for i in ok if i < len(cached))
        gaps = [g for i in ok if i < len(itls) for g in (itls[i] or [])]
        ttft = sorted(float(ttfts[i]) for i in ok)
        out.append(
            {
                "turn": k,
                "requests": len(ok),
                "mean_context_tokens": round(prompt / len(ok), 1),
                "median_ttft_ms": round(ttft[len(ttft) // 2] * 1000, 3),
                "cache_hit_rate": round(hits / prompt, 4) if prompt and cached else None,
                "tok_s_per_user": round(len(gaps) / sum(gaps), 2) if gaps and sum(gaps) > 0 else None,
            }
        )
    return out


TRACE_DATASETS = ("agentic-trace", "mooncake")


def served_context_length(base_url: str | None, api_key: str | None = None, timeout: float = 5.0) -> int | None:
    """The served model's context length as SGLang reports it: GET /v1/models `max_model_len` (the
    model config's context_len; sgl-project/sglang python/sglang/srt/entrypoints/http_server.py,
    available_models). A generated trace whose design leaves context_length unset grows toward it.
    None when the server does not say (the trace is then not capped, and its design says so)."""
    if not base_url:
        return None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        cards = httpx.get(base_url.rstrip("/") + "/v1/models", headers=headers, timeout=timeout).json()["data"]
        value = cards[0].get("max_model_len") if len(cards) == 1 else None
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


def prepare_trace(
    scenario: Scenario,
    folder: RunFolder,
    dataset_path: str | Path | None,
    context_length: int | None = None,
    time_scale: float = 1.0,
) -> tuple[Path, Any] | None:
    """The trace file a trace scenario replays and its content: the user's own (dataset_path, checked)
    or one generated from the scenario's design into the run folder, its turns capped by the design's
    context_length, else by `context_length` (the served model's). Sessions (agentic-trace, mooncake
    with the chat backend) get the scenario's think time and their times on the emulator's clock
    (speed/sessions.py), written into the run folder. None for other datasets."""
    if is_constant(scenario):
        return prepare_constant(scenario, folder)  # evenly spaced arrivals (speed/arrivals.py)
    if scenario.dataset not in TRACE_DATASETS:
        return None
    if dataset_path is not None:
        if scenario.dataset == "mooncake" and not session_replay(scenario):
            return Path(dataset_path), None
        if scenario.dataset == "mooncake":
            return _timed(
                scenario, folder, mooncake_sessions(read_mooncake(dataset_path), str(dataset_path)), time_scale
            )
        doc = load_trace(dataset_path)
        if scenario.think_time is None and time_scale == 1.0:
            return Path(dataset_path), doc
        return _timed(scenario, folder, doc, time_scale)
    if scenario.trace is None:
        raise TraceError(
            f"scenario {scenario.id}: dataset {scenario.dataset} needs a trace. Fix: give the scenario a "
            "'trace:' design (conversations, turns, system_tokens, first_tokens, turn_tokens, output_len) "
            "or pass dataset_path=<your trace file> to the speed stage."
        )
    design = scenario.trace
    if design.context_length is None and context_length:
        design = design.model_copy(update={"context_length": context_length})
    seed = scenario.seed or 0
    path = folder.bench_output(scenario.id).with_suffix(".trace.json")
    folder.mkdir(path.parent)
    if scenario.dataset == "mooncake":
        rows = mooncake_trace(design, seed)
        folder.save_text(path.with_suffix(".jsonl"), "".join(json.dumps(r) + "\n" for r in rows))
        if session_replay(scenario):
            return _timed(scenario, folder, mooncake_sessions(rows, str(path.with_suffix(".jsonl"))), time_scale)
        return path.with_suffix(".jsonl"), rows
    doc = agentic_trace(design, seed)
    if scenario.think_time is not None:
        return _timed(scenario, folder, doc, time_scale)
    folder.save_json(path, doc)
    return path, doc


def _timed(scenario: Scenario, folder: RunFolder, doc: dict[str, Any], time_scale: float) -> tuple[Path, Any]:
    """The sessions with the scenario's think time, written as the run's replay file."""
    doc = with_think_time(doc, scenario.think_time, scenario.seed or 0, time_scale)
    path = folder.bench_output(scenario.id).with_suffix(".sessions.json")
    folder.mkdir(path.parent)
    folder.save_json(path, doc)
    return path, doc


def trace_results(scenario: Scenario, trace: tuple[Path, Any] | None, raw: dict[str, Any]) -> dict[str, Any]:
    """What a trace scenario adds to its result row: the trace file, SGLang's cache report, the hit
    rate the trace designs (agentic-trace) and the per-turn figures."""
    if trace is None:
        return {}
    path, doc = trace
    report = raw.get("cache_report") or {}
    out: dict[str, Any] = {"trace_file": str(path), "cache_report": report or None}
    if report.get("cache_hit_rate_pct") is not None:
        out["cache_hit_rate"] = round(float(report["cache_hit_rate_pct"]) / 100.0, 4)
    if scenario.dataset == "agentic-trace" and isinstance(doc, dict):
        out["designed_hit_rate"] = round(designed_hit_rate(doc, scenario.max_concurrency), 4)
    if isinstance(doc, dict):  # agentic-trace, or mooncake replayed as sessions
        out["turns"] = per_turn(raw, doc)
        think = (doc.get("metadata") or {}).get("think_time")
        if think is not None:
            out["think_time"] = {**think, "planned_delay_s": round(planned_think_s(doc), 3)}
    return out
