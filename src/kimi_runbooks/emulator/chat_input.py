"""Reads a validated chat request into a Conversation and counts its prompt tokens.

Prompt tokens are the counting tokenizer applied to the conversation rendered with its chat
template (kimi/chat_template.py: messages, prior tool calls, the tool declarations SGLang hands the
template: none for tool_choice "none", only the named tool for a named choice), plus each image's
vision tokens. A client with the emulator's tokenizer directory counts the same for text.
Images are checked here so a broken one is a 400 before anything is scheduled.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..kimi.chat_template import render
from ..kimi.tokenizer import VOCAB_SIZE, token_ids
from .conversation import Conversation, ToolSpec
from .error_answers import ApiError
from .images import ImageError, ImageInfo, inspect_image_url
from .protocol import ChatMessage, ChatRequest

TOKENS_PER_IMAGE_WRAP = 2  # media begin/end markers
TOKENS_PER_VIDEO = 1024
"""Emulated: the emulator does not decode video, so a clip costs a fixed count (not a measurement)."""
TEXT_ONLY = "Model only supports text input; received unsupported content type '{kind}'."
"""serving_chat.py _validate_media_content: a model that is not multimodal refuses any media part."""
NO_VIDEO = (
    "video input is not supported for this model (emulator: its params/models entry says video: false; "
    "send image_url parts, or serve a model that declares video)"
)


@dataclass
class ChatInput:
    conversation: Conversation
    prompt_tokens: int
    prompt_ids: list[int] = field(default_factory=list)
    """The rendered prompt's token ids, then each image's vision tokens as ids derived from what the
    emulator reads of it (size, mean colour): the prefix cache's key (radix.py). SGLang pads image
    tokens with a hash of the image's data, so a repeated image hits its cache too."""


def read_chat(req: ChatRequest, video: bool = True, media: bool = True) -> ChatInput:
    """``media``: the model is multimodal (SGLang refuses image and video parts otherwise);
    ``video``: it takes video_url parts (SGLang's serving layer passes them to the model's
    processor, so this refusal's wording is the emulator's: a 400 naming the rule)."""
    _check_media(req, media)
    tools = [
        ToolSpec(t.function.name, t.function.description or "", t.function.parameters or {}) for t in req.tools or []
    ]
    convo = Conversation(tools=tools, tool_choice=_tool_choice(req))
    declared = [t.model_dump(mode="json", exclude_none=True) for t in rendered_tools(req)]
    messages = [m.model_dump(mode="json", exclude_none=True) for m in req.messages]
    ids = token_ids(render(messages, declared))
    for index, message in enumerate(req.messages):
        text, images = _message_parts(message, index)
        videos = _videos(message, index, video)
        for img in images:
            ids += _media_ids(f"{img.source}:{img.width}x{img.height}:{img.colour}", img.tokens + TOKENS_PER_IMAGE_WRAP)
        for part in range(videos):
            ids += _media_ids(f"video-{index}-{part}", TOKENS_PER_VIDEO + TOKENS_PER_IMAGE_WRAP)
        if message.role == "user":
            convo.last_user_text = text
            convo.images = images
            convo.videos = videos
    convo.last_role = req.messages[-1].role
    convo.tool_results = _trailing_tool_results(req.messages)
    convo.called_since_user, convo.results_since_user = _since_last_user(req.messages)
    return ChatInput(conversation=convo, prompt_tokens=len(ids), prompt_ids=ids)


def rendered_tools(req: ChatRequest) -> list[Any]:
    """The tools the chat template gets (serving_chat.py ``_apply_jinja_template``): none for
    tool_choice "none", only the named one for a named choice, else all of them."""
    choice = req.tool_choice
    if choice == "none":
        return []
    if choice is not None and not isinstance(choice, str):
        return [t for t in req.tools or [] if t.function.name == choice.function.name]
    return list(req.tools or [])


def _media_ids(digest: str, count: int) -> list[int]:
    """Stand-in ids for a medium's tokens: the same description gives the same ids."""
    start = int.from_bytes(hashlib.blake2b(digest.encode(), digest_size=4).digest(), "big")
    return [(start + k) % VOCAB_SIZE for k in range(count)]


def _tool_choice(req: ChatRequest) -> str | dict[str, Any]:
    choice = req.tool_choice
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return choice
    return {"type": "function", "function": {"name": choice.function.name}}


def _check_media(req: ChatRequest, media: bool) -> None:
    if media:
        return
    for message in req.messages:
        for part in message.content if isinstance(message.content, list) else []:
            if part.type in ("image_url", "video_url"):
                raise ApiError(TEXT_ONLY.format(kind=part.type))


def _videos(message: ChatMessage, index: int, allowed: bool) -> int:
    if message.content is None or isinstance(message.content, str):
        return 0
    found = [i for i, part in enumerate(message.content) if part.type == "video_url"]
    if found and not allowed:
        raise ApiError(NO_VIDEO, 400, f"messages.{index}.content.{found[0]}.video_url")
    return len(found)


def _message_parts(message: ChatMessage, index: int) -> tuple[str, list[ImageInfo]]:
    if message.content is None or isinstance(message.content, str):
        return message.content or "", []
    texts, images = [], []
    for part_index, part in enumerate(message.content):
        if part.type == "text":
            texts.append(part.text or "")
        elif part.type == "image_url":
            try:
                images.append(inspect_image_url(part.image_url.url if part.image_url else ""))
            except ImageError as exc:
                raise ApiError(str(exc), 400, f"messages.{index}.content.{part_index}.image_url") from None
    return "\n".join(texts), images


def _trailing_tool_results(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """Tool results after the last assistant turn, with the tool name each answers."""
    names = {}
    for message in messages:
        for call in message.tool_calls or []:
            if call.id:
                names[call.id] = call.function.name or ""
    results = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        text, _ = _message_parts(message, 0)
        name = message.name or names.get(message.tool_call_id or "", "") or _name_from_id(message.tool_call_id)
        results.append((name, text))
    return list(reversed(results))


def _since_last_user(messages: list[ChatMessage]) -> tuple[list[str], list[tuple[str, str]]]:
    """Tools called after the last user message, and the results that came back for them."""
    last_user = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
    called: list[str] = []
    results: list[tuple[str, str]] = []
    for message in messages[last_user + 1 :]:
        called += [call.function.name or "" for call in message.tool_calls or []]
        if message.role == "tool":
            text, _ = _message_parts(message, 0)
            results.append((message.name or _name_from_id(message.tool_call_id), text))
    return called, results


def _name_from_id(call_id: str | None) -> str:
    """functions.get_weather:0 -> get_weather."""
    if call_id and call_id.startswith("functions.") and ":" in call_id:
        return call_id[len("functions.") :].rsplit(":", 1)[0]
    return ""
