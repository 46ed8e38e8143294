"""Sessions as a trace times them, inside bench_serving's multi-turn replay (stdlib only; loaded by
bench_worker.py in the bench env, or run by path in place of ``python -m sglang.bench_serving``).

SGLang 0.5.23's ``--dataset-name agentic-trace`` replays each conversation round by round, the
server's real reply appended as history (benchmark/serving.py ``wrap_multi_turn_request_func``), but
sends each round the moment the previous reply ends, every round with the one
``--sharegpt-output-len``, and starts conversations by ``--request-rate`` only. Its mooncake
replay (``--mooncake-num-rounds``) sends a session's rounds all at once with placeholder replies.
Here the turns of a trace file (speed/sessions.py writes them) may carry, beside ``messages``:

* ``delay``: ms to wait after the previous reply before sending this turn (AIPerf's mooncake_trace
  field: think time);
* ``timestamp``: ms on the trace's clock; a later turn goes at the session's first send + (its
  timestamp - the first turn's), or when the previous reply ends if that is later; when every
  conversation's first turn has one, conversations start at their timestamps (as bench_serving's
  mooncake replay starts sessions), ``--request-rate`` ignored;
* ``output_len``: the turn's own max tokens.

``installed(serving, args)`` patches the module's ``wrap_multi_turn_request_func`` and ``get_request``
for one run whose dataset file has such turns, and prints what it applied
(``session replay: ...``, read back by speed/sessions.py). The warm-up (before the measured
requests start) does not wait. Conversations are told apart by their first turn's messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

FIELDS = ("delay", "timestamp", "output_len")
SUMMARY = "session replay:"


def conversation_key(messages: Sequence[Any]) -> str:
    """The messages before the first assistant reply (a conversation's first turn), as one string;
    role and content only, as bench_serving keeps them (_normalize_round_messages)."""
    first = []
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "assistant":
            break
        first.append(
            {"role": message.get("role"), "content": message.get("content")} if isinstance(message, dict) else message
        )
    return json.dumps(first, sort_keys=True, default=str)


def plans_of(doc: Any) -> dict[str, list[dict[str, float]]]:
    """Conversation key -> each turn's delay / timestamp / output_len (only conversations with any)."""
    plans: dict[str, list[dict[str, float]]] = {}
    for conversation in (doc or {}).get("conversations") or []:
        turns = [t for t in conversation if isinstance(t, dict) and t.get("messages")]
        plan = [
            {k: float(t[k]) for k in FIELDS if isinstance(t.get(k), (int, float)) and not isinstance(t.get(k), bool)}
            for t in turns
        ]
        if turns and any(plan):
            plans.setdefault(conversation_key(turns[0]["messages"]), plan)
    return plans


@dataclasses.dataclass
class Replay:
    """The plans of one run and what was applied (see module doc)."""

    plans: dict[str, list[dict[str, float]]]
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Any] = asyncio.sleep
    measuring: bool = False
    waits: int = 0
    waited_s: float = 0.0
    timed_starts: int = 0
    _first_sent: dict[str, float] = dataclasses.field(default_factory=dict)

    def wrap_request(self, request_func: Callable[..., Any]) -> Callable[..., Any]:
        """The single-round request function, waiting each round's think time first."""

        async def one_round(request_func_input: Any, pbar: Any = None) -> Any:
            messages = request_func_input.prompt if isinstance(request_func_input.prompt, list) else []
            key = conversation_key(messages)
            k = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
            plan = self.plans.get(key) or []
            turn = plan[k] if k < len(plan) else {}
            if k == 0:
                self._first_sent[key] = self.clock()
            elif self.measuring:
                await self._pause(key, plan[0] if plan else {}, turn)
            if "output_len" in turn:
                request_func_input = dataclasses.replace(request_func_input, output_len=int(turn["output_len"]))
            return await request_func(request_func_input, pbar=pbar)

        return one_round

    async def _pause(self, key: str, first: dict[str, float], turn: dict[str, float]) -> None:
        wait = 0.0
        if "timestamp" in turn and "timestamp" in first and key in self._first_sent:
            due = self._first_sent[key] + (turn["timestamp"] - first["timestamp"]) / 1000.0
            wait = due - self.clock()
        elif "delay" in turn:
            wait = turn["delay"] / 1000.0
        if wait > 0:
            self.waits += 1
            self.waited_s += wait
            await self.sleep(wait)

    def wrap_get_request(self, original: Callable[..., Any]) -> Callable[..., Any]:
        """bench_serving's request generator: the measured run begins; conversations start at their
        first turn's timestamp when every one has one, else as bench_serving sends them."""

        async def get_request(
            input_requests: list[Any], request_rate: float, *args: Any, **kw: Any
        ) -> AsyncIterator[Any]:
            self.measuring = True
            starts = [self._start_ms(row) for row in input_requests]
            if not input_requests or any(s is None for s in starts):
                async for row in original(input_requests, request_rate, *args, **kw):
                    yield row
                return
            t0, base = self.clock(), min(s for s in starts if s is not None)
            for start, row in sorted(zip(starts, input_requests), key=lambda pair: pair[0]):
                wait = t0 + (float(start or 0.0) - base) / 1000.0 - self.clock()
                if wait > 0:
                    await self.sleep(wait)
                self.timed_starts += 1
                yield row

        return get_request

    def _start_ms(self, row: Any) -> float | None:
        prompt = getattr(row, "prompt", None)
        if not isinstance(prompt, list) or not prompt or not isinstance(prompt[0], list):
            return None
        plan = self.plans.get(conversation_key(prompt[0])) or [{}]
        return plan[0].get("timestamp")

    def summary(self) -> str:
        return (
            f"{SUMMARY} {self.waits} turns waited {self.waited_s:.3f} s of think time in all; "
            f"{self.timed_starts} sessions started at their trace timestamps"
        )


def _arg(args: Sequence[str], flag: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            return str(args[i + 1])
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
    return None


def replay_for(args: Sequence[str]) -> Replay | None:
    """The replay a bench_serving command needs: an agentic-trace file with timed turns, else None."""
    path = _arg(args, "--dataset-path")
    if _arg(args, "--dataset-name") != "agentic-trace" or not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            plans = plans_of(json.load(fh))
    except (OSError, ValueError):
        return None  # bench_serving's own loader reports an unreadable file
    return Replay(plans) if plans else None


@contextlib.contextmanager
def installed(serving: Any, args: Sequence[str]) -> Iterator[Replay | None]:
    """Patch `serving` for this run when its dataset needs it (module doc); restored after."""
    replay = replay_for(args)
    if replay is None or not callable(getattr(serving, "wrap_multi_turn_request_func", None)):
        yield None
        return
    wrap, get_request = serving.wrap_multi_turn_request_func, serving.get_request

    def patched_wrap(request_func: Callable[..., Any], backend: str) -> Callable[..., Any]:
        return wrap(replay.wrap_request(request_func), backend=backend)

    serving.wrap_multi_turn_request_func = patched_wrap
    serving.get_request = replay.wrap_get_request(get_request)
    try:
        yield replay
    finally:
        serving.wrap_multi_turn_request_func, serving.get_request = wrap, get_request
        print(replay.summary(), flush=True)


def main() -> int:
    """Run bench_serving's CLI with the replay installed (the one-process-per-scenario fallback)."""
    try:
        import sglang.benchmark.serving as serving  # type: ignore[import-not-found]
    except ImportError:
        import sglang.bench_serving as serving  # type: ignore[import-not-found]
    args = sys.argv[1:]
    sys.argv = ["bench_serving", *args]
    with installed(serving, args):
        serving.cli_main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
