"""Sessions replayed as sessions: multi-round mooncake traces and think time between turns.

bench_serving 0.5.23 replays a mooncake trace one round per session (``--mooncake-num-rounds`` 1),
and its multi-round mode sends a session's rounds all at once, each with a placeholder reply
("story story ..."), so round 2 never waits for round 1 (benchmark/datasets/mooncake.py). Its
agentic-trace replay does carry the server's real reply into the next round, but sends every round
the moment the previous reply ends. Agents and users pause between turns (tools run, people
read); the pause decides how long a session's KV stays idle in the cache and how many sessions
are in flight, so a replay without it overstates load and cache reuse at once.

Here a mooncake scenario with the chat backend is replayed as sessions: ``mooncake_sessions``
turns the JSONL rows (AIPerf's mooncake_trace format: rows sharing a ``session_id`` are one
session's rounds in order; ``delay`` ms of think time, ``timestamp`` ms) into bench_serving's
agentic-trace document. Each round's new user message is the prompt text of the hash ids the
previous round did not have, built as bench_serving builds mooncake prompts (one "<id>" + 128 x "hi"
block per id), and the server's own reply is carried as history. ``with_think_time`` adds the
scenario's ``think_time`` (a named distribution, as AIPerf's --conversation-turn-delay-*) to turns
with no delay or timestamp of their own, and puts the trace's times on the emulator's clock (x
time_scale). tools/scripts/session_replay.py applies them inside bench_serving's replay and prints
what it waited, which ``applied`` reads back for the result row.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..catalog import Scenario, ThinkTime

BLOCK_WORDS = 128
"""bench_serving's mooncake prompt: "<id>" + 128 x "hi" per hash id (benchmark/datasets/mooncake.py)."""
TIMED = ("delay", "timestamp")
SUMMARY = re.compile(
    r"session replay: (?P<waits>\d+) turns waited (?P<waited>[\d.]+) s of think time in all; "
    r"(?P<starts>\d+) sessions started at their trace timestamps"
)


class SessionError(ValueError):
    """A mooncake trace that cannot be replayed as sessions; the message names the rule and the fix."""


def session_replay(scenario: Scenario) -> bool:
    """A mooncake scenario replayed as sessions (rounds in order, replies as history, think time):
    the chat backend's; the native backend keeps bench_serving's own mooncake replay."""
    return scenario.dataset == "mooncake" and scenario.backend == "sglang-oai-chat"


def block_text(hash_ids: Sequence[int]) -> str:
    return "".join(f"{hash_id}" + " ".join(["hi"] * BLOCK_WORDS) for hash_id in hash_ids)


def read_mooncake(path: str | Path) -> list[dict[str, Any]]:
    """A mooncake JSONL file's rows (one JSON object a line), or SessionError naming the line."""
    p = Path(path)
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise SessionError(f"mooncake trace {p} does not exist. Fix: pass the path of a local JSONL trace.") from None
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SessionError(f"{p}:{number} is not JSON ({exc}). Fix: one JSON object per line.") from None
        rows.append(row)
    return rows


def _session_rows(rows: Sequence[Mapping[str, Any]], where: str) -> dict[str, list[Mapping[str, Any]]]:
    sessions: dict[str, list[Mapping[str, Any]]] = {}
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping) or not isinstance(row.get("input_length"), int):
            raise SessionError(
                f"{where}: row {index} needs an integer input_length (mooncake format: timestamp, "
                "input_length, output_length, hash_ids; session_id and delay for multi-round sessions). "
                "Fix: add input_length"
            )
        sid = row.get("session_id")
        sessions.setdefault(str(sid) if sid is not None else f"row-{index}", []).append(row)
    return sessions


def mooncake_sessions(rows: Sequence[Mapping[str, Any]], where: str = "mooncake trace") -> dict[str, Any]:
    """The agentic-trace document replaying these mooncake rows as sessions (module doc): one
    conversation per session_id (a row without one is a session of its own), rounds in file order."""
    conversations = []
    for sid, session in _session_rows(rows, where).items():
        turns: list[dict[str, Any]] = []
        previous_ids: list[int] = []
        previous: Mapping[str, Any] | None = None
        for k, row in enumerate(session):
            ids = [int(i) for i in row.get("hash_ids") or []]
            new_ids = ids[len(previous_ids) :] if ids[: len(previous_ids)] == previous_ids else ids
            if new_ids or not ids:
                text = block_text(new_ids) if new_ids else " ".join(["hi"] * _new_tokens(row, previous))
            else:
                text = "Continue."  # a round that adds no block of its own
            # the session's name after its blocks: sessions sharing leading hash ids share a prompt prefix
            content = f"{text} (session {sid})" if k == 0 else f"Round {k + 1}: {text}"
            turn: dict[str, Any] = {"messages": [{"role": "user", "content": content}]}
            turn["prompt_tokens"] = int(row["input_length"])
            if isinstance(row.get("output_length"), int):
                turn["output_len"] = int(row["output_length"])
            for key in TIMED:
                if isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool):
                    turn[key] = float(row[key])
            turns.append(turn)
            previous_ids, previous = ids, row
        conversations.append(turns)
    rounds = [len(c) for c in conversations]
    metadata = {
        "format": "agentic-trace from mooncake sessions (kimi_runbooks.speed.sessions)",
        "sessions": len(conversations),
        "rounds_per_session": {"min": min(rounds), "max": max(rounds)} if rounds else None,
    }
    return {"metadata": metadata, "conversations": conversations}


def _new_tokens(row: Mapping[str, Any], previous: Mapping[str, Any] | None) -> int:
    """A round without hash ids: its input_length less the previous round's prompt and reply."""
    if previous is None:
        return max(int(row["input_length"]), 1)
    carried = int(previous["input_length"]) + int(previous.get("output_length") or 0)
    return max(int(row["input_length"]) - carried, 1)


def draw_ms(think: ThinkTime, rng: random.Random) -> float:
    """One think time from the named distribution (ms)."""
    if think.distribution == "constant":
        return think.mean_ms
    if think.distribution == "normal":
        return max(rng.gauss(think.mean_ms, think.stddev_ms), 0.0)  # AIPerf clips negative draws too
    return rng.expovariate(1.0 / think.mean_ms) if think.mean_ms > 0 else 0.0


def with_think_time(doc: dict[str, Any], think: ThinkTime | None, seed: int, time_scale: float = 1.0) -> dict[str, Any]:
    """A copy of `doc` whose turns after the first carry `delay` (ms) drawn from `think` where the
    trace gives neither delay nor timestamp, and whose delays and timestamps are on the emulator's
    clock (x time_scale). Records the think time in the metadata."""
    rng = random.Random(seed)
    scale = time_scale if time_scale and time_scale > 0 else 1.0
    conversations = []
    drawn: list[float] = []
    for conversation in doc["conversations"]:
        turns = []
        for k, turn in enumerate(conversation):
            new = dict(turn)
            for key in TIMED:
                if isinstance(new.get(key), (int, float)):
                    new[key] = round(float(new[key]) * scale, 3)
            if k > 0 and think is not None and not any(key in turn for key in TIMED):
                model_ms = draw_ms(think, rng)
                drawn.append(model_ms)
                new["delay"] = round(model_ms * scale, 3)
            turns.append(new)
        conversations.append(turns)
    metadata = dict(doc.get("metadata") or {})
    metadata["think_time"] = {
        "distribution": think.model_dump() if think is not None else None,
        "drawn_turns": len(drawn),
        "drawn_mean_ms": round(sum(drawn) / len(drawn), 3) if drawn else None,
        "time_scale": scale,
    }
    return {**doc, "metadata": metadata, "conversations": conversations}


def timed(doc: Any) -> bool:
    """Whether any turn of the document carries a delay, a timestamp or its own output length."""
    convs = doc.get("conversations") if isinstance(doc, dict) else None
    return any(isinstance(t, dict) and any(k in t for k in (*TIMED, "output_len")) for c in convs or [] for t in c)


def planned_think_s(doc: Any) -> float:
    """Seconds of think time the document asks for by delays (on the clock it was written for)."""
    convs = doc.get("conversations") if isinstance(doc, dict) else None
    return sum(float(t.get("delay") or 0.0) for c in convs or [] for t in c[1:] if isinstance(t, dict)) / 1000.0


def applied(log_text: str) -> dict[str, Any] | None:
    """What session_replay.py printed it applied (the last run in the log), or None."""
    found = list(SUMMARY.finditer(log_text or ""))
    if not found:
        return None
    m = found[-1]
    return {"waits": int(m["waits"]), "waited_s": float(m["waited"]), "timed_starts": int(m["starts"])}
