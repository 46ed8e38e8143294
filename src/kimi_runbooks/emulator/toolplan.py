"""Which tools the emulated model calls this turn: its whole "agent policy", in one place.

The emulator has no model, so tool use follows a few fixed rules a reader can predict:

* a tool is *relevant* when the last user message names it (exact name, or its name's words
  and description words score >= 2); ``none`` calls nothing;
* ``tool_choice`` named or ``required`` forces a call on *every* turn, a tool result's follow-up
  included: SGLang 0.5.23 installs the tool-call constraint whatever the last message's role
  (serving_chat.py ``_process_messages`` -> ``FunctionCallParser.get_structure_constraint``; for
  kimi_k2 a structural tag that admits only calls). Named calls that tool; ``required`` calls
  the relevant tools still pending, else the best-scoring tool not yet called since the last
  user message (an agent's ``final_result`` output tool after its other tools answered), else
  the best-scoring tool;
* relevant tools are called one per turn, in the order the user mentions them, each once
  after the last user message (call -> result -> next call, as an agent works through a task);
  when the user asks for them "in parallel" / "at the same time" they are called together;
* once every relevant tool has answered, the model restates the results.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .conversation import Conversation, ToolSpec

_STOPWORDS = {
    "the",
    "and",
    "for",
    "with",
    "from",
    "that",
    "this",
    "what",
    "whats",
    "get",
    "into",
    "about",
    "your",
    "you",
    "are",
    "tool",
    "function",
    "given",
    "return",
    "returns",
}
_IMAGE_WORDS = {"search", "product", "image", "photo", "picture", "find", "lookup", "visual"}
_PARALLEL = re.compile(r"\b(in parallel|at the same time|simultaneously|all at once)\b", re.I)
RELEVANT_SCORE = 2
EXACT_NAME_BONUS = 4


def tools_for_turn(convo: Conversation) -> list[ToolSpec]:
    """The tools called in this turn (empty: answer in text)."""
    if not convo.tools or convo.tool_choice == "none":
        return []
    forced = forced_tool_name(convo.tool_choice)
    if forced:
        return [t for t in convo.tools if t.name == forced][:1]
    pending = _pending(convo)
    if pending:
        return pending if _PARALLEL.search(convo.last_user_text) else pending[:1]
    if convo.tool_choice == "required":
        return [_best_uncalled(convo)]
    return []


def _best_uncalled(convo: Conversation) -> ToolSpec:
    """The best-scoring tool, preferring those not called since the last user message."""
    done = set(convo.called_since_user)
    ranked = sorted(
        ((tool.name in done, -tool_score(tool, convo), i) for i, tool in enumerate(convo.tools)),
    )
    return convo.tools[ranked[0][2]]


def _pending(convo: Conversation) -> list[ToolSpec]:
    """Relevant tools not yet called since the last user message, in the order the user names them."""
    done = set(convo.called_since_user)
    ranked = []
    for index, tool in enumerate(convo.tools):
        if tool.name in done or tool_score(tool, convo) < RELEVANT_SCORE:
            continue
        ranked.append((_first_mention(tool, convo.last_user_text), index, tool))
    return [tool for _, _, tool in sorted(ranked, key=lambda r: (r[0], r[1]))]


def forced_tool_name(choice: Any) -> str | None:
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if isinstance(name, str):
            return name
    return None


def tool_score(tool: ToolSpec, convo: Conversation) -> int:
    words = stems(convo.last_user_text)
    name_words = stems(tool.name.replace("_", " ").replace("-", " "))
    desc_words = {w for w in stems(tool.description) if len(w) >= 4}
    score = 2 * len(words & name_words) + len(words & desc_words)
    if convo.images and (name_words | desc_words) & _IMAGE_WORDS:
        score += 2
    if _names_exactly(tool.name, convo.last_user_text):
        score += EXACT_NAME_BONUS
    return score


def _names_exactly(name: str, text: str) -> bool:
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def _first_mention(tool: ToolSpec, text: str) -> int:
    """Where the user first refers to the tool (its exact name, else one of its name's words)."""
    exact = re.search(rf"(?<![\w.-]){re.escape(tool.name)}(?![\w-])", text)
    if exact:
        return exact.start()
    lowered = text.lower()
    positions = []
    for word in stems(tool.name.replace("_", " ").replace("-", " ")):
        match = re.search(rf"\b{re.escape(word)}", lowered)
        if match:
            positions.append(match.start())
    return min(positions, default=len(text))


def stems(text: str) -> set[str]:
    words = re.findall(r"[a-z]+", text.lower())
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in words if w not in _STOPWORDS}
