"""The chat template of the counting tokenizer (tokenizer.py): the emulator renders prompts with it,
hands it to clients in its tokenizer directory (tokenizer_files.py), and the stages render it to
know what an emulated server will charge.

A ChatML layout with SmolLM2's control tokens (``<|im_start|>role\\n ... <|im_end|>\\n``, tool
declarations as a JSON system turn, an assistant generation prompt). Kimi-K2's own layout is
k2_format.CHAT_TEMPLATE, written with Kimi's special tokens, which only the tiny rehearsal
checkpoint's tokenizer has (tiny_tokenizer.py); the counting tokenizer has SmolLM2's, so its
template is written in them. Rendered the way ``transformers`` renders ``apply_chat_template`` (a
sandboxed Jinja environment with ``trim_blocks`` and ``lstrip_blocks``, its ``tojson`` filter), so a
client that applies this template with the counting tokenizer counts exactly the prompt tokens the
emulator reports for text messages. Images are not in the template: the emulator adds each image's
vision tokens on top (emulator/images.py).
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Template

CHATML_TEMPLATE = (
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
    # Jinja loads with the first prompt rendered: the template's readers (tokenizer_files.py) need none
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = _tojson
    return env.from_string(CHATML_TEMPLATE)


def render(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, add_generation_prompt: bool = True
) -> str:
    return _template().render(messages=messages, tools=tools or None, add_generation_prompt=add_generation_prompt)
