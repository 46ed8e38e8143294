"""What the emulated model can do, read from its params/models entry: thinking, effort levels, media.

The parser a server runs decides the output's shape (formats.py); the model decides what it writes:
whether it thinks when asked not to (``thinking: always``, e.g. Kimi-K3 and Kimi-K2.7-Code), which
``reasoning_effort`` levels it honours and how long it then thinks, and whether it takes video.
No model name is tested anywhere: a model is these fields.

``reasoning_effort`` follows SGLang 0.5.23: a level the model declares is passed to its renderer
(serving_chat.py ``_encode_messages``, Kimi-K3 branch: ``thinking_effort``); any other value is
logged and the renderer's default applies (same place: "does not support reasoning_effort=...;
using the encoder default"). How much longer a higher level thinks is the emulator's own choice
(each level doubles the reasoning), labelled emulated: no published measurement sets it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from .content import Reply, filler_text

if TYPE_CHECKING:
    from ..catalog import Model

EFFORT_GROWTH = 2
"""Emulated: each effort level above the lowest doubles the reasoning length."""


@dataclass(frozen=True)
class ModelCapabilities:
    thinking: Literal["optional", "always"] = "optional"
    effort_levels: tuple[str, ...] = ()
    effort_default: str | None = None
    images: bool = True
    video: bool = False
    model_type: str = "kimi_k25"
    architectures: tuple[str, ...] = ("KimiK25ForConditionalGeneration",)
    """What /model_info reports from the checkpoint's config (params/models hf_model_type, hf_architectures)."""

    @classmethod
    def from_model(cls, model: Model) -> ModelCapabilities:
        effort = model.reasoning_effort
        return cls(
            thinking=model.thinking,
            effort_levels=tuple(effort.levels) if effort else (),
            effort_default=effort.default if effort else None,
            images=model.multimodal,
            video=model.video,
            model_type=model.hf_model_type,
            architectures=tuple(model.hf_architectures),
        )

    def model_thinks(self, thinking_requested: bool) -> bool:
        return thinking_requested or self.thinking == "always"

    def effort(self, requested: Any) -> str | None:
        """The level the model reasons at: the requested one if it has it, else its default."""
        if not self.effort_levels:
            return None
        return requested if requested in self.effort_levels else self.effort_default

    def reasoning_repeats(self, requested: Any) -> int:
        """How many times the planned reasoning is written out at this effort (1 at the lowest)."""
        level = self.effort(requested)
        if level is None:
            return 1
        return int(EFFORT_GROWTH ** self.effort_levels.index(level))

    def with_effort(self, reply: Reply, requested: Any, rng: random.Random) -> Reply:
        """The reply's reasoning at the effort the model reasons at: extra passes above the lowest
        level (so a higher level never thinks less: each level's passes extend the one below)."""
        repeats = self.reasoning_repeats(requested)
        if repeats <= 1 or not reply.reasoning:
            return reply
        level = self.effort(requested)
        passes = [
            f" Pass {k + 2} at {level} effort: I go over the reasoning once more. " + filler_text(rng, 2)
            for k in range(repeats - 1)
        ]
        return replace(reply, reasoning=reply.reasoning + "".join(passes))


def model_entry(model_path: str | None, served_name: str | None, params_dir: Any = None) -> Model | None:
    """The params/models entry whose hf_id, served_name or id is this model (the checkpoint is
    looked up first: a served name can be anything); None when none is, or params/ cannot be read."""
    from ..catalog import ParamsError, load_catalog

    try:
        catalog = load_catalog(params_dir)
    except (ParamsError, OSError):
        return None
    for name in (model_path, served_name):
        for model in catalog.models.values():
            if name and name in (model.hf_id, model.served_name, model.id):
                return model
    return None


def capabilities_for(model_path: str | None, served_name: str | None, params_dir: Any = None) -> ModelCapabilities:
    """The entry's capabilities; the defaults (a Kimi-K2.6-like model) without one."""
    model = model_entry(model_path, served_name, params_dir)
    return ModelCapabilities.from_model(model) if model is not None else ModelCapabilities()
