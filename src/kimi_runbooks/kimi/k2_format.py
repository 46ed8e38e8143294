"""Kimi-K2's chat format: its special tokens and a chat template of its shape.

The roles, separators and image placeholder are SGLang's own `kimi-k2` conversation template
(python/sglang/srt/parser/conversation.py, sgl-project/sglang): `<|im_system|>system<|im_middle|>`,
`<|im_user|>user<|im_middle|>`, `<|im_assistant|>assistant<|im_middle|>`, each turn closed by
`<|im_end|>`, an image as `<|media_start|>image<|media_content|><|media_pad|><|media_end|>`. Tool
declarations, tool calls and tool returns are written the way the `kimi_k2` tool-call parser reads
them (python/sglang/srt/function_call/kimik2_detector.py): a `tool_declare` system turn,
`<|tool_calls_section_begin|><|tool_call_begin|>ID<|tool_call_argument_begin|>ARGS<|tool_call_end|>
<|tool_calls_section_end|>`, and `## Return of ID` before a tool's answer. Thinking is the model's
`<think>...</think>`; `chat_template_kwargs={"thinking": false}` closes it in the prompt, as
Kimi-K2.5/K2.6 do (https://huggingface.co/moonshotai/Kimi-K2.6). The template is ours, in that
shape; Moonshot's own file carries more (default system prompt, history reasoning handling).
"""

from __future__ import annotations

BOS, EOS, TURN_END = "[BOS]", "[EOS]", "<|im_end|>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
TOOL_SECTION_BEGIN, TOOL_SECTION_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
TOOL_CALL_BEGIN, TOOL_ARGUMENT_BEGIN, TOOL_CALL_END = (
    "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>",
    "<|tool_call_end|>",
)

SPECIAL_TOKENS: tuple[str, ...] = (
    BOS,
    EOS,
    TURN_END,
    "<|im_user|>",
    "<|im_assistant|>",
    "<|im_system|>",
    "<|im_middle|>",
    "<|media_start|>",
    "<|media_content|>",
    "<|media_end|>",
    "<|media_pad|>",
    TOOL_SECTION_BEGIN,
    TOOL_SECTION_END,
    TOOL_CALL_BEGIN,
    TOOL_ARGUMENT_BEGIN,
    TOOL_CALL_END,
)
"""Control tokens: one id each, dropped by a detokenizer that skips special tokens (SGLang keeps them
when a request carries tools, serving_chat.py, so the tool-call parser sees its markers)."""

PLAIN_ADDED_TOKENS: tuple[str, ...] = (THINK_OPEN, THINK_CLOSE)
"""One id each but not special: the `kimi_k2` reasoning parser reads them from the decoded text of every
request, tools or not (SGLang does not keep special tokens for it)."""

CHAT_TEMPLATE = (
    "{%- if tools -%}<|im_system|>tool_declare<|im_middle|>{{ tools | tojson }}<|im_end|>{%- endif -%}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'user' -%}<|im_user|>user<|im_middle|>"
    "{%- elif message['role'] == 'assistant' -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- else -%}<|im_system|>{{ message['role'] }}<|im_middle|>{%- endif -%}"
    "{%- if message['role'] == 'tool' -%}## Return of {{ message['tool_call_id'] }}\n{%- endif -%}"
    "{%- if message['content'] is string -%}{{ message['content'] }}"
    "{%- elif message['content'] -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{ part['text'] }}"
    "{%- else -%}<|media_start|>image<|media_content|><|media_pad|><|media_end|>{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- if message['tool_calls'] -%}<|tool_calls_section_begin|>{%- for call in message['tool_calls'] -%}"
    "<|tool_call_begin|>{{ call['id'] }}<|tool_call_argument_begin|>"
    "{%- if call['function']['arguments'] is string -%}{{ call['function']['arguments'] }}"
    "{%- else -%}{{ call['function']['arguments'] | tojson }}{%- endif -%}<|tool_call_end|>"
    "{%- endfor -%}<|tool_calls_section_end|>{%- endif -%}<|im_end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>"
    "{%- if thinking is defined and not thinking -%}<think></think>{%- endif -%}{%- endif -%}"
)


def tool_call_text(name: str, index: int, arguments: str) -> str:
    """One call as the model writes it and the `kimi_k2` parser reads it (id `functions.NAME:INDEX`)."""
    return f"{TOOL_CALL_BEGIN}functions.{name}:{index}{TOOL_ARGUMENT_BEGIN}{arguments}{TOOL_CALL_END}"


def scripted_reply(reasoning: str | None, content: str = "", calls: list[tuple[str, str]] | None = None) -> str:
    """The raw text of one assistant turn: reasoning, then content or tool calls, then the turn's end.
    What a scripted tiny model emits so SGLang's own parsers have something to split."""
    text = f"{THINK_OPEN}{reasoning}{THINK_CLOSE}" if reasoning is not None else ""
    text += content
    if calls:
        text += TOOL_SECTION_BEGIN
        text += "".join(tool_call_text(name, i, args) for i, (name, args) in enumerate(calls))
        text += TOOL_SECTION_END
    return text + TURN_END
