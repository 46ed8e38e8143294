"""The chat template the emulator renders prompts with, and hands to clients in its tokenizer directory.

A ChatML layout with SmolLM2's control tokens (``<|im_start|>role\\n ... <|im_end|>\\n``, tool
declarations as a JSON system turn, an assistant generation prompt); Kimi's own template has
the same shape with its own markers. Rendered the way ``transformers`` renders
``apply_chat_template`` (a sandboxed Jinja environment with ``trim_blocks`` and ``lstrip_blocks``,
its ``tojson`` filter), so a client that applies this template with the emulator's tokenizer
counts exactly the prompt tokens the emulator reports for text messages. Images are not in the
template: the emulator adds each image's vision tokens on top (images.py).
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from jinja2 import Template
from jinja2.sandbox import ImmutableSandboxedEnvironment

CHAT_TEMPLATE = (
    "{% if tools %}<|im_start|>system\n{{ tools | tojson }}<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% elif message['content'] %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{% if message['tool_calls'] %}{% for call in message['tool_calls'] %}"
    "<tool_call>{{ call['function']['name'] }} {{ call['function']['arguments'] }}</tool_call>"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tojson(
    value: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False
) -> str:
    """transformers' tojson filter (utils/chat_template_utils.py)."""
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@cache
def _template() -> Template:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    return env.from_string(CHAT_TEMPLATE)


def render(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, add_generation_prompt: bool = True
) -> str:
    return _template().render(messages=messages, tools=tools or None, add_generation_prompt=add_generation_prompt)
