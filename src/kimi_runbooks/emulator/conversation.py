"""The parts of a chat request that decide the emulated reply, read once from the request
(chat_input) and consulted by the reply writers (content, toolplan, tool_faults)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .images import ImageInfo


@dataclass(frozen=True)
class ToolSpec:
    """A function tool as declared in the request."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass
class Conversation:
    """The parts of a chat request that decide the reply."""

    last_role: str = "user"
    last_user_text: str = ""
    images: list[ImageInfo] = field(default_factory=list)
    videos: int = 0  # video_url parts in the last user message (not decoded)
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: Any = "auto"  # "auto" | "none" | "required" | {"function": {"name"}}
    tool_results: list[tuple[str, str]] = field(default_factory=list)  # (tool name, content), trailing
    called_since_user: list[str] = field(default_factory=list)  # tools called after the last user message
    results_since_user: list[tuple[str, str]] = field(default_factory=list)  # their results, in order
