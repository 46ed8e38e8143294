"""Tool-calling fault modes: the failures Kimi users report against real servers, on demand.

Each ``--fault`` below makes the emulator misbehave the way a public report describes, so the
invoke stage's agentic suite can be shown to catch it (tests/invoke/test_agentic.py). Normal
mode never goes through any of this; it stays held to SGLang 0.5.23 by the contract suite.

* ``empty-after-think``: on a tool-call follow-up the reply is reasoning, then nothing: empty
  content, no tool call, finish_reason stop (MoonshotAI/Kimi-K2 issue 128; the same empty
  answer comes from a call the parser dropped, sgl-project/sglang issue 25358).
* ``markers-in-content``: the tool-call section is returned as raw text in ``content`` with no
  ``tool_calls`` (sgl-project/sglang PR 21377, vybestack/llxprt-code issue 712).
* ``ids-restart``: tool-call ids restart at 0 every turn instead of counting the calls already
  in the conversation (sgl-project/sglang issue 10600).
* ``uuid-call-ids``: ids ``call_<hex>`` instead of ``functions.<name>:<idx>``, as SGLang gave
  before PR 9606 (sgl-project/sglang issue 9575).
* ``stream-args-cut``: a long streamed argument string loses its second half; the stream still
  ends with tool_calls (sgl-project/sglang issue 23363).
* ``call-in-reasoning``: the tool call stays inside ``reasoning_content`` as raw markers.
* ``hyphen-names-dropped``: calls to a tool whose name has a hyphen are dropped, as a parser whose
  name regex lacks ``-`` does (vllm-project/vllm PR 22149; sgl-project/sglang issue 23363).
* ``parallel-index-reused``: every streamed tool-call delta says index 0, so two parallel calls
  merge into one on the client (sgl-project/sglang issue 10600).
* ``tool-choice-ignored``: ``tool_choice`` none/required/named is treated as auto.
* ``truncated-call-kept``: a call cut by max_tokens is returned as a call, finish_reason
  tool_calls (SGLang 0.5.23 drops it and says length).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from .content import Reply, ToolCall
from .conversation import Conversation
from .events import Plan
from .formats import FORMATS, ChatFormat
from .settings import TOOL_FAULT_KINDS, EmulatorSettings

SECTION_OPEN, SECTION_CLOSE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CALL_OPEN, CALL_ARGS, CALL_CLOSE = "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"
LONG_ARGUMENTS = 512  # characters: stream-args-cut only hits arguments longer than this


def raw_section(calls: list[ToolCall], first_index: int) -> str:
    """Kimi's native tool-call text, as the model writes it (kimik2_detector.py's format)."""
    body = "".join(
        f"{CALL_OPEN}functions.{c.name}:{first_index + k}{CALL_ARGS}{c.arguments}{CALL_CLOSE}"
        for k, c in enumerate(calls)
    )
    return SECTION_OPEN + body + SECTION_CLOSE


@dataclass(frozen=True)
class ToolFaults:
    """The active tool-calling fault of one emulator (``kind`` None: behave as SGLang does)."""

    kind: str | None
    fmt: ChatFormat = FORMATS["kimi_k2"]  # the parser's id convention (formats.py)

    @classmethod
    def from_settings(cls, settings: EmulatorSettings) -> ToolFaults:
        kind = settings.fault.kind if settings.fault else None
        return cls(kind if kind in TOOL_FAULT_KINDS else None, settings.chat_format)

    def conversation(self, convo: Conversation) -> Conversation:
        """tool-choice-ignored: every choice is auto (tools still declared, even for none)."""
        if self.kind == "tool-choice-ignored" and convo.tool_choice != "auto":
            return replace(convo, tool_choice="auto")
        return convo

    def reply(self, reply: Reply, convo: Conversation, thinking: bool, history_calls: int) -> Reply:
        """The reply as the faulty server returns it (reasoning, content, parsed calls)."""
        if self.kind == "empty-after-think" and convo.last_role == "tool":
            return Reply(reasoning=reply.reasoning, content="")
        if not reply.tool_calls:
            return reply
        if self.kind == "markers-in-content":
            return Reply(reply.reasoning, reply.content + raw_section(reply.tool_calls, history_calls))
        if self.kind == "call-in-reasoning" and thinking:
            return Reply(reply.reasoning + raw_section(reply.tool_calls, history_calls), reply.content)
        if self.kind == "hyphen-names-dropped":
            kept = [c for c in reply.tool_calls if "-" not in c.name]
            renumbered = [ToolCall(i, c.name, c.arguments) for i, c in enumerate(kept)]
            return Reply(reply.reasoning, reply.content, renumbered)
        return reply

    def call_id(self, name: str, history_calls: int, position: int) -> str:
        if self.kind == "ids-restart":
            return f"functions.{name}:{position}"
        if self.kind == "uuid-call-ids":
            digest = hashlib.blake2b(f"{name}:{history_calls}:{position}".encode(), digest_size=12).hexdigest()
            return f"call_{digest}"
        return self.fmt.tool_call_id(name, history_calls, position)

    def stream_index(self, index: int) -> int:
        return 0 if self.kind == "parallel-index-reused" else index

    def keeps_cut_calls(self) -> bool:
        return self.kind == "truncated-call-kept"

    def dropped_stream_pieces(self, plan: Plan) -> set[int]:
        """stream-args-cut: positions of the events holding the second half of each long argument string."""
        if self.kind != "stream-args-cut":
            return set()
        dropped: set[int] = set()
        for call in {e.call for e in plan.events if e.kind == "tool_args"}:
            positions = [i for i, e in enumerate(plan.events) if e.kind == "tool_args" and e.call == call]
            total = sum(len(plan.events[i].text) for i in positions)
            if total <= LONG_ARGUMENTS:
                continue
            sent = 0
            for i in positions:
                if sent >= total // 2:
                    dropped.add(i)
                sent += len(plan.events[i].text)
        return dropped
