"""Turn what the emulator sent back into the raw engine output SGLang's serving layer would parse.

The emulator has no model, so the text, the token count and the stop are its own; SGLang's
code then decides everything else (which keys, which chunks, reasoning/tool-call parsing,
ids, finish reasons, usage). The raw output follows Kimi-K2's formats as SGLang's parsers
read them: reasoning inside ``<think>...</think>`` (parser/reasoning_parser.py KimiK2Detector)
and tool calls as ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:K
<|tool_call_argument_begin|>{json}<|tool_call_end|>...<|tool_calls_section_end|>``
(function_call/kimik2_detector.py). Engine outputs have TokenizerManager's shape
(managers/tokenizer_manager.py ``_handle_batch_output``): ``text`` cumulative (the default
non-incremental streaming), ``output_ids``, ``meta_info``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
SECTION_OPEN, SECTION_CLOSE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_OPEN, CALL_ARGS, CALL_CLOSE = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


def request_json(exchange: dict[str, Any]) -> dict[str, Any]:
    try:
        body = json.loads(exchange["request"]["body"] or "null")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def thinking_on(body: dict[str, Any]) -> bool:
    kwargs = body.get("chat_template_kwargs") or {}
    return kwargs.get("thinking", True) is not False


def history_calls(body: dict[str, Any]) -> int:
    return sum(
        len(m.get("tool_calls") or [])
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "assistant"
    )


def raw_finish(choice: dict[str, Any], tokens: int, eos: int) -> dict[str, Any] | None:
    """The engine's finish_reason behind an OpenAI-level one (SGLang turns stop into tool_calls)."""
    reason = choice.get("finish_reason")
    if reason == "length":
        return {"type": "length", "length": tokens}
    if reason == "stop":
        return {"type": "stop", "matched": choice.get("matched_stop")}
    if reason == "tool_calls":
        return {"type": "stop", "matched": eos}
    return None


def _meta(rid: str, prompt: int, completion: int, reasoning: int, finish: Any) -> dict[str, Any]:
    meta = {
        "id": rid,
        "finish_reason": finish,
        "prompt_tokens": prompt,
        "weight_version": "default",
        "num_retractions": 0,
        "reasoning_tokens": reasoning,
        "completion_tokens": completion,
        "cached_tokens": 0,
    }
    if finish is not None:
        # the scheduler's weight-version spans reach the last output (seen live: test_live_differential.py)
        meta["weight_versions"] = [{"version": "default", "start": 0, "end": completion}]
        meta["e2e_latency"] = 0.0
    return meta


def split_tokens(total: int, body: dict[str, Any], index: int) -> int:
    """Choice ``index``'s share of usage's completion tokens. A body tells one choice's own count only
    in metadata.weight_versions (the first choice's spans: weight_versions.py); that goes to choice 0,
    the rest of the total to choice 1, so the sum SGLang reports is kept."""
    spans = (body.get("metadata") or {}).get("weight_versions") or []
    first = spans[-1].get("end") if spans and isinstance(spans[-1], dict) else None
    first = first if isinstance(first, int) and 0 <= first <= total else total
    return first if index == 0 else (total - first if index == 1 else 0)


def _calls_text(calls: list[dict[str, Any]], first_index: int) -> str:
    text = SECTION_OPEN
    for k, call in enumerate(calls):
        fn = call.get("function") or {}
        text += (
            f"{CALL_OPEN}functions.{fn.get('name')}:{first_index + k}{CALL_ARGS}{fn.get('arguments') or ''}{CALL_CLOSE}"
        )
    return text + SECTION_CLOSE


# ---------------------------------------------------------------- whole responses


def chat_finals(exchange: dict[str, Any], body: dict[str, Any], eos: int) -> list[dict[str, Any]]:
    usage = body.get("usage") or {}
    req = request_json(exchange)
    finals = []
    for i, choice in enumerate(body.get("choices") or []):
        message = choice.get("message") or {}
        reasoning, content = message.get("reasoning_content"), message.get("content") or ""
        calls = message.get("tool_calls") or []
        raw = ""
        if thinking_on(req):
            raw += THINK_OPEN + (reasoning or "")
            if content or calls or choice.get("finish_reason") != "length":
                raw += THINK_CLOSE
        elif reasoning:
            raw += reasoning
        raw += content
        if calls:
            raw += _calls_text(calls, history_calls(req))
        # usage is summed over choices by SGLang: give the totals to choice 0 (less what the others wrote)
        completion = split_tokens(int(usage.get("completion_tokens") or 0), body, i)
        reasoning_tokens = int(usage.get("reasoning_tokens") or 0) if i == 0 else 0
        finish = raw_finish(choice, completion, eos)
        finals.append(
            {
                "text": raw,
                "output_ids": [0] * completion,
                "meta_info": _meta(
                    f"{body.get('id')}-{i}", exchange["prompt_tokens"] or 0, completion, reasoning_tokens, finish
                ),
            }
        )
    return finals


def completion_finals(exchange: dict[str, Any], body: dict[str, Any], eos: int) -> list[dict[str, Any]]:
    usage = body.get("usage") or {}
    req = request_json(exchange)
    echo = req.get("prompt", "") if req.get("echo") else ""
    finals = []
    for i, choice in enumerate(body.get("choices") or []):
        text = choice.get("text") or ""
        if echo and text.startswith(echo):
            text = text[len(echo) :]
        completion = split_tokens(int(usage.get("completion_tokens") or 0), body, i)
        finals.append(
            {
                "text": text,
                "output_ids": [0] * completion,
                "meta_info": _meta(
                    f"{body.get('id')}-{i}",
                    exchange["prompt_tokens"] or 0,
                    completion,
                    0,
                    raw_finish(choice, completion, eos),
                ),
            }
        )
    return finals


def generate_finals(body: Any) -> list[dict[str, Any]]:
    """/generate outputs pass through SGLang's route untouched: replay them with TM's keys."""
    items = body if isinstance(body, list) else [body]
    out = []
    for item in items:
        meta = dict(item.get("meta_info") or {})
        ids = item.get("output_ids")
        if ids is None:  # TokenizerManager always sends output_ids
            ids = [0] * int(meta.get("completion_tokens") or 0)
        out.append({"text": item.get("text", ""), "output_ids": ids, "meta_info": meta})
    return out


# ---------------------------------------------------------------- streams


class _Choice:
    """Raw pieces of one choice index, rebuilt from the emulator's deltas."""

    def __init__(self, think: bool, first_call_index: int) -> None:
        self.pieces: list[str] = []
        self.reasoning_pieces = 0
        self.think_open = think
        self.opened_think = False
        self.in_section = False
        self.call_open = False
        self.next_call = first_call_index
        self.finish: dict[str, Any] | None = None

    def add(self, piece: str, reasoning: bool = False) -> None:
        if self.think_open and not self.opened_think:
            piece, self.opened_think = THINK_OPEN + piece, True
        self.pieces.append(piece)
        self.reasoning_pieces += int(reasoning)

    def close_think(self) -> str:
        if self.think_open:
            self.think_open = False
            return THINK_CLOSE
        return ""

    def tool_delta(self, call: dict[str, Any]) -> None:
        fn = call.get("function") or {}
        if fn.get("name"):
            prefix = self.close_think() + ("" if self.in_section else SECTION_OPEN)
            prefix += CALL_CLOSE if self.call_open else ""
            self.in_section = self.call_open = True
            self.add(
                f"{prefix}{CALL_OPEN}functions.{fn['name']}:{self.next_call}{CALL_ARGS}" + (fn.get("arguments") or "")
            )
            self.next_call += 1
        elif fn.get("arguments"):
            self.add(fn["arguments"])

    def end(self) -> None:
        tail = (CALL_CLOSE if self.call_open else "") + (SECTION_CLOSE if self.in_section else "")
        if tail:
            if self.pieces:
                self.pieces[-1] += tail
            else:
                self.pieces.append(tail)


def _streamed_choices(events: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each choice of each streamed chunk, with its index, in arrival order."""
    for event in events:
        for choice in (_json(event.get("data")) or {}).get("choices") or []:
            yield int(choice.get("index") or 0), choice


def chat_stream(exchange: dict[str, Any], events: list[dict[str, Any]], eos: int) -> list[dict[str, Any]]:
    req = request_json(exchange)
    order: list[tuple[int, int]] = []  # (choice index, piece number) in arrival order
    choices: dict[int, _Choice] = {}
    finishes: dict[int, dict[str, Any]] = {}
    for index, choice in _streamed_choices(events):
        state = choices.setdefault(index, _Choice(thinking_on(req), history_calls(req)))
        delta = choice.get("delta") or {}
        before = len(state.pieces)
        if delta.get("reasoning_content"):
            state.add(delta["reasoning_content"], reasoning=True)
        if delta.get("content") and delta.get("role") is None:
            state.add(state.close_think() + delta["content"])
        for call in delta.get("tool_calls") or []:
            state.tool_delta(call)
        order += [(index, n) for n in range(before, len(state.pieces))]
        if choice.get("finish_reason"):
            finishes[index] = choice
    return _stream_outputs(exchange, choices, order, finishes, eos, _usage_tokens(events, len(choices)))


def _usage_tokens(events: list[dict[str, Any]], choices: int) -> int | None:
    """The completion tokens of a one-choice stream's usage chunk: a token that ends inside a
    character sends no delta, so pieces can be fewer than tokens (the emulator's count stands)."""
    if choices != 1:
        return None
    for event in events:
        chunk = _json(event.get("data"))
        usage = (chunk or {}).get("usage")
        if isinstance(usage, dict) and usage.get("completion_tokens") is not None:
            return int(usage["completion_tokens"])
    return None


def completion_stream(exchange: dict[str, Any], events: list[dict[str, Any]], eos: int) -> list[dict[str, Any]]:
    req = request_json(exchange)
    echo = req.get("prompt", "") if req.get("echo") else ""
    order: list[tuple[int, int]] = []
    choices: dict[int, _Choice] = {}
    finishes: dict[int, dict[str, Any]] = {}
    for index, choice in _streamed_choices(events):
        state = choices.setdefault(index, _Choice(False, 0))
        text = choice.get("text") or ""
        if echo and not state.pieces and text.startswith(echo):
            text = text[len(echo) :]
        if text:
            state.add(text)
            order.append((index, len(state.pieces) - 1))
        if choice.get("finish_reason"):
            finishes[index] = choice
    return _stream_outputs(exchange, choices, order, finishes, eos)


def _stream_outputs(
    exchange: dict[str, Any],
    choices: dict[int, _Choice],
    order: list[tuple[int, int]],
    finishes: dict[int, dict[str, Any]],
    eos: int,
    final_tokens: int | None = None,
) -> list[dict[str, Any]]:
    for state in choices.values():
        state.end()
    last = {index: max([n for i, n in order if i == index], default=-1) for index in choices}
    for index, state in choices.items():  # a choice that produced nothing still ends with one output
        if last[index] < 0:
            state.pieces.append("")
            order.append((index, 0))
            last[index] = 0
    outputs = []
    reasoning_seen: dict[int, int] = {}
    for index, n in order:
        state = choices[index]
        text = "".join(state.pieces[: n + 1])
        done = n == last[index]
        tokens = final_tokens if done and final_tokens is not None else n + 1
        finish = raw_finish(finishes[index], tokens, eos) if done and index in finishes else None
        reasoning_seen[index] = min(state.reasoning_pieces, n + 1)
        item: dict[str, Any] = {
            "text": text,
            "output_ids": [0] * tokens,
            "meta_info": _meta(f"rid-{index}", exchange["prompt_tokens"] or 0, tokens, reasoning_seen[index], finish),
        }
        if len(choices) > 1:
            item["index"] = index
        outputs.append(item)
    return outputs


def generate_stream(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for event in events:
        item = _json(event.get("data"))
        if not isinstance(item, dict) or "meta_info" not in item:
            continue
        meta = dict(item["meta_info"])
        ids = item.get("output_ids")
        if ids is None:
            ids = [0] * int(meta.get("completion_tokens") or 0)
        out.append({"text": item.get("text", ""), "output_ids": ids, "meta_info": meta})
    return out


def _json(text: str | None) -> Any:
    if text is None or text == "[DONE]":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# ---------------------------------------------------------------- raw engine output


def raw_script(exchange: dict[str, Any], eos: int) -> dict[str, Any]:
    """The engine output from the raw pieces the emulator's model generated (emulator/raw.py), as
    they are: what SGLang's parsers make of them is then SGLang's answer. One output per token;
    choices interleave in turn (the cases use n=1)."""
    raw = exchange["raw"]
    prompt = int(raw["prompt_tokens"])
    finals: list[dict[str, Any]] = []
    stream: list[dict[str, Any]] = []
    many = len(raw["choices"]) > 1
    for i, choice in enumerate(raw["choices"]):
        pieces = choice["pieces"]
        n = len(pieces)
        finish = {"type": "length", "length": n} if choice["finish"] == "length" else {"type": "stop", "matched": eos}
        finals.append(
            {
                "text": "".join(pieces),
                "output_ids": [0] * n,
                "meta_info": _meta(f"rid-{i}", prompt, n, choice["reasoning_tokens"], finish),
            }
        )
        for k in range(n):
            item: dict[str, Any] = {
                "text": "".join(pieces[: k + 1]),
                "output_ids": [0] * (k + 1),
                "meta_info": _meta(
                    f"rid-{i}", prompt, k + 1, min(choice["reasoning_tokens"], k + 1), finish if k == n - 1 else None
                ),
            }
            if many:
                item["index"] = i
            stream.append(item)
    return {"prompt_tokens": prompt, "finals": finals, "stream": stream}
