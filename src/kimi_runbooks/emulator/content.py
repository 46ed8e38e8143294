"""What the emulated model says: deterministic replies shaped like Kimi-K2.6's.

The emulator has no model, so replies are written from the request itself: the
same request always gets the same reply (seeded from its content), and a handful
of prompts a runbook's feature probes send get answers that *look right* to a
checker (a numeric comparison answered correctly, a weather question turned into a
get_weather call, a tool result restated).  Everything else gets filler that says
it is emulated.  All text here was written for this project.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from ..kimi.tokenizer import tokenize
from .conversation import Conversation, ToolSpec
from .toolargs import Hints, arguments_for
from .toolplan import tools_for_turn


@dataclass(frozen=True)
class ToolCall:
    index: int
    name: str
    arguments: str

    @property
    def id(self) -> str:
        """Kimi's tool-call id convention: functions.<name>:<index>."""
        return f"functions.{self.name}:{self.index}"


@dataclass
class Reply:
    """A natural (untruncated) reply: thinking, visible answer, tool calls."""

    reasoning: str
    content: str
    tool_calls: list[ToolCall] = field(default_factory=list)


def seeded_rng(*parts: Any) -> random.Random:
    """A random generator fixed by the request's content (and the server seed)."""
    blob = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    digest = hashlib.blake2b(blob.encode("utf-8", "replace"), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


# ---------------------------------------------------------------- chat replies


def chat_reply(convo: Conversation, rng: random.Random, bad_tool_json: bool = False) -> Reply:
    """Pick the reply kind for a chat turn and write it (tool policy: toolplan.py)."""
    tools = tools_for_turn(convo)
    if tools:
        return _tool_call_reply(convo, tools, bad_tool_json)
    if convo.last_role == "tool" and convo.tool_results:
        return _tool_result_reply(convo, rng)
    comparison = numeric_comparison(convo.last_user_text)
    if comparison is not None:
        return comparison
    if convo.images:
        return _image_reply(convo, rng)
    if convo.videos:
        return _video_reply(convo)
    return _generic_reply(convo.last_user_text, rng)


def _generic_reply(text: str, rng: random.Random) -> Reply:
    topic = topic_of(text)
    reasoning = f'The user wrote: "{topic}". No tool is needed, so a short direct answer is enough. ' + filler_text(
        rng, rng.randint(1, 2)
    )
    content = f"Emulated answer about: {topic}. " + filler_text(rng, rng.randint(1, 3))
    return Reply(reasoning=reasoning, content=content)


def _image_reply(convo: Conversation, rng: random.Random) -> Reply:
    described = "; ".join(img.describe() for img in convo.images)
    n = len(convo.images)
    reasoning = (
        f"The user sent {n} image{'s' if n > 1 else ''} and asked: "
        f'"{topic_of(convo.last_user_text)}". I will say what can be seen.'
    )
    content = (
        f"I see {described}. This description comes from the emulator, which only inspects size and average colour."
    )
    return Reply(reasoning=reasoning, content=content)


def _video_reply(convo: Conversation) -> Reply:
    n = convo.videos
    clips = f"{n} video{'s' if n > 1 else ''}"
    reasoning = f'The user sent {clips} and asked: "{topic_of(convo.last_user_text)}". I will say what I received.'
    content = f"I received {clips}. The emulator does not decode video, so it cannot say what happens in it."
    return Reply(reasoning=reasoning, content=content)


def _tool_result_reply(convo: Conversation, rng: random.Random) -> Reply:
    results = convo.tool_results
    names = [name or "the tool" for name, _ in results]
    reasoning = (
        f"The {results[-1][0] or 'tool'} call returned a result. "
        "I will restate it for the user without calling another tool."
        if len(results) == 1
        else f"The {', '.join(names)} calls returned results. I will restate them for the user."
    )
    content = " ".join(f"According to {name}: {summarize_tool_result(text)}" for name, (_, text) in zip(names, results))
    return Reply(reasoning=reasoning, content=content)


def _tool_call_reply(convo: Conversation, tools: list[ToolSpec], bad_tool_json: bool) -> Reply:
    hints = hints_from(convo)
    calls, details = [], []
    for index, tool in enumerate(tools):
        args = arguments_for(tool.parameters, hints)
        arguments = json.dumps(args, ensure_ascii=False)
        if bad_tool_json:
            arguments = malform_json(arguments)
        calls.append(ToolCall(index, tool.name, arguments))
        details.append(", ".join(f"{k}={_brief(v)}" for k, v in args.items()) or "no arguments")
    if len(tools) == 1:
        reasoning = (
            f"The request needs the {tools[0].name} tool. I will call it with {details[0]} "
            "and answer once the result comes back."
        )
    else:
        reasoning = (
            "The request needs several tools at once. I will call "
            + "; ".join(f"{t.name} with {d}" for t, d in zip(tools, details))
            + ", and answer once the results come back."
        )
    return Reply(reasoning=reasoning, content="", tool_calls=calls)


def _brief(value: Any) -> str:
    """A value as the reasoning mentions it; no angle brackets (SGLang's parsers hold back a '<')."""
    if isinstance(value, dict):
        return f"an object of {len(value)} keys"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return str(value)


def malform_json(text: str) -> str:
    """Broken JSON the way a model without constrained decoding sometimes writes it."""
    return text[:-1] + ("," if len(text) > 2 else "") if text.endswith("}") else text + "{"


# ---------------------------------------------------------------- argument hints


def hints_from(convo: Conversation) -> Hints:
    """What argument values borrow: the user's words, a JSON document they gave, earlier results."""
    text = convo.last_user_text
    query = None
    if convo.images:
        img = convo.images[0]
        colour = f"{img.colour} " if img.colour else ""
        query = f"{colour}product like the one in the image".strip()
        topic = topic_of(text, 6)
        if topic:
            query = f"{query}: {topic}"
    extras = quoted_values(text)
    for _, result in convo.results_since_user:  # a value an earlier tool returned, reused by key
        data = _json_object(result)
        extras.update({k.lower(): v for k, v in (data or {}).items() if isinstance(v, str)})
    return Hints(text=text, location=find_location(text), query=query, extras=extras, document=json_document(text))


def quoted_values(text: str) -> dict[str, str]:
    """'with path "notes/a.json"' -> {"path": "notes/a.json"}: values the user spelled out (fences skipped)."""
    prose = re.sub(r"```.*?```", " ", text, flags=re.S)
    return {k.lower(): v for k, v in re.findall(r"\b([A-Za-z_]\w*)\s+\"([^\"\n]{1,200})\"", prose)}


def json_document(text: str) -> dict[str, Any] | None:
    """The JSON object a user pasted (in a ```json fence, else the outermost braces), if any."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidates = [fenced.group(1)] if fenced else []
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for candidate in candidates:
        data = _json_object(candidate)
        if data:
            return data
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def find_location(text: str) -> str | None:
    """A capitalised place name after 'in/at/for/near', e.g. 'weather in Beijing' -> Beijing."""
    match = re.search(r"\b(?:in|at|for|near|of)\s+((?:[A-Z][\w'-]*)(?:\s+[A-Z][\w'-]*)*)", text)
    return match.group(1) if match else None


# ---------------------------------------------------------------- comparisons

_BIGGER = re.compile(r"\b(bigger|larger|greater|higher|more)\b", re.I)
_SMALLER = re.compile(r"\b(smaller|less|lower|fewer)\b", re.I)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?")


def numeric_comparison(text: str) -> Reply | None:
    """Answer 'which is bigger/smaller, A or B' with place-value reasoning."""
    wants_big, wants_small = _BIGGER.search(text), _SMALLER.search(text)
    numbers = _NUMBER.findall(text)
    if not (wants_big or wants_small) or len(numbers) < 2:
        return None
    try:
        a, b = Decimal(numbers[0]), Decimal(numbers[1])
    except InvalidOperation:
        return None
    word = "bigger" if wants_big else "smaller"
    if a == b:
        return Reply(
            reasoning=f"{numbers[0]} and {numbers[1]} are the same value.",
            content=f"Neither: {numbers[0]} and {numbers[1]} are equal.",
        )
    pick_a = (a > b) if wants_big else (a < b)
    winner, loser = (numbers[0], numbers[1]) if pick_a else (numbers[1], numbers[0])
    places = max(_decimals(numbers[0]), _decimals(numbers[1]))
    pa, pb = (f"{Decimal(n):.{places}f}" for n in numbers[:2])
    reasoning = (
        f"I need to decide which of {numbers[0]} and {numbers[1]} is {word}. "
        f"Write both with {places} decimal places: {numbers[0]} becomes {pa} and "
        f"{numbers[1]} becomes {pb}. Comparing place by place, {winner} is {word}. "
        f"The number of digits after the point does not make a number bigger."
    )
    content = (
        f"{winner} is {word} than {loser}. With the same number of decimal places, "
        f"{numbers[0]} = {pa} and {numbers[1]} = {pb}, so {winner} is {word}."
    )
    return Reply(reasoning=reasoning, content=content)


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


# ---------------------------------------------------------------- plain completions


def completion_text(prompt: str, rng: random.Random) -> str:
    """Raw continuation for /generate and /v1/completions (no chat template, no thinking)."""
    comparison = numeric_comparison(prompt)
    if comparison is not None:
        return " " + comparison.content
    return " " + filler_text(rng, rng.randint(2, 5))


# ---------------------------------------------------------------- helpers


def topic_of(text: str, max_words: int = 12) -> str:
    words = re.sub(r"\s+", " ", text or "").replace('"', "'").strip().split(" ")
    topic = " ".join(words[:max_words]).strip()
    return topic + (" ..." if len(words) > max_words else "")


def summarize_tool_result(result: str, limit: int = 300) -> str:
    """Restate a tool result: JSON objects as 'key: value' pairs, text as is (truncated)."""
    try:
        data = json.loads(result)
    except (TypeError, ValueError):
        data = None
    if isinstance(data, dict) and data:
        text = ", ".join(f"{k}: {_scalar(v)}" for k, v in data.items())
    else:
        text = re.sub(r"\s+", " ", str(result)).strip() or "(empty result)"
    return text if len(text) <= limit else text[:limit].rstrip() + " ..."


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


_FILLER = (
    "This text comes from the kimi-runbooks emulator, not from a model.",
    "Token counts are exact, so speed numbers stay comparable between runs.",
    "The emulator follows the latency profile it was started with.",
    "Each sentence here is chosen from a fixed list by a seeded generator.",
    "A real deployment would answer with generated text at this point.",
    "Nothing in this reply should be read as a statement about the world.",
    "Streaming, usage and finish reasons behave like an SGLang server.",
    "The same request always receives the same emulated reply.",
    "Runbooks use this output to rehearse probes, benchmarks and reports.",
    "Measured numbers from this server are labelled as emulated.",
    "Reasoning and answer are kept apart the way the reasoning parser does it.",
    "Tool calls carry ids such as functions.get_weather:0 when a tool fits.",
)


def filler_text(rng: random.Random, sentences: int) -> str:
    return " ".join(rng.choice(_FILLER) for _ in range(max(sentences, 0)))


def filler_pieces(rng: random.Random, count: int, lead: str = " ") -> list[str]:
    """Exactly ``count`` token pieces of filler; the first starts with ``lead`` (may be "")."""
    pieces: list[str] = []
    first = True
    while len(pieces) < count:
        sentence = rng.choice(_FILLER)
        text = (lead if first else " ") + sentence
        first = False
        pieces.extend(tokenize(text))
    return pieces[:count]
