"""What the checks know of the model being served: its declared capabilities and the plan's parsers.

Checks are chosen from these fields, never from a model name: a model that always thinks gets
``always_thinking`` instead of ``instant``; one with ``reasoning_effort`` levels gets
``reasoning_effort``; ``video`` gets the video check (skipped, with the reason, when the model
declares none); a plan's context length sizes ``long_context``. Tool-call ids, argument streaming
and think markers follow the plan's ``--tool-call-parser`` / ``--reasoning-parser`` (kimi/parsers.py;
a parser the project does not know is judged as kimi_k2).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ..catalog.flags import flag_value
from ..kimi.parsers import DEFAULT_PARSER, PARSERS, IdFormat, ParserFormat

if TYPE_CHECKING:
    from ..catalog import Model
    from ..plan import LaunchPlan


def _parser(name: str | None) -> ParserFormat:
    return PARSERS.get(name or "", PARSERS[DEFAULT_PARSER])


@dataclass(frozen=True)
class ServedModel:
    """Defaults: a Kimi-K2.6 served with the kimi_k2 parsers (what every check assumed before)."""

    tool_call_parser: str = "kimi_k2"
    reasoning_parser: str | None = "kimi_k2"
    thinking: Literal["optional", "always"] = "optional"
    effort_levels: tuple[str, ...] = ()
    effort_default: str | None = None
    images: bool = True
    video: bool = False
    context_length: int | None = None
    kv_pool_tokens: int | None = None
    """The plan's KV pool per DP rank (its memory estimate); a live server's own figure wins."""
    declared: dict[str, Any] = field(default_factory=dict)  # the fields as read, for the report

    @classmethod
    def from_model(
        cls,
        model: Model,
        context_length: int | None = None,
        tool_call_parser: str | None = None,
        reasoning_parser: str | None = None,
    ) -> ServedModel:
        effort = model.reasoning_effort
        served = cls(
            tool_call_parser=tool_call_parser or model.tool_call_parser,
            reasoning_parser=reasoning_parser or model.default_reasoning_parser,
            thinking=model.thinking,
            effort_levels=tuple(effort.levels) if effort else (),
            effort_default=effort.default if effort else None,
            images=model.multimodal,
            video=model.video,
            context_length=context_length or model.max_context_length,
        )
        declared = {
            "model": model.id,
            "thinking": served.thinking,
            "reasoning_effort": list(served.effort_levels) or None,
            "video": served.video,
            "context_length": served.context_length,
            "tool_call_parser": served.tool_call_parser,
        }
        return cls(**{**served.__dict__, "declared": declared})

    @classmethod
    def from_plan(cls, plan: LaunchPlan) -> ServedModel:
        """The plan's model with the parsers and context length its command launches it with."""
        context = flag_value(plan.argv, "--context-length")
        served = cls.from_model(
            plan.model,
            context_length=int(context) if context and context.isdigit() else None,
            tool_call_parser=flag_value(plan.argv, "--tool-call-parser"),
            reasoning_parser=flag_value(plan.argv, "--reasoning-parser"),
        )
        pool = plan.memory.kv_pool_tokens or None
        return replace(served, kv_pool_tokens=pool, declared={**served.declared, "kv_pool_tokens": pool})

    @classmethod
    def of_run(cls, run_dir: Any) -> ServedModel | None:
        """The model a run folder's deploy stage launched (its plan.json), or None (no plan, or an
        external server no plan describes): ``run_all(..., served=ServedModel.of_run(run_dir))``."""
        from ..perfmodel.beside_measured import plan_of_run
        from ..rundir import RunFolder

        if run_dir is None:
            return None
        folder = RunFolder.of(run_dir)
        handle = folder.read_json(RunFolder.HANDLE) or {}
        launch, _ = plan_of_run(folder.read_json(RunFolder.PLAN), external=handle.get("launcher") == "external")
        return cls.from_plan(launch) if launch is not None else None

    @property
    def ids(self) -> IdFormat:
        return _parser(self.tool_call_parser).ids

    @property
    def streams_tool_arguments(self) -> bool:
        """kimi_k2 streams a call's arguments in pieces; kimi_k3's detector (function_call/
        kimik3_detector.py) sends each call whole, once its close marker arrives."""
        return _parser(self.tool_call_parser).streams_tool_arguments

    @property
    def think_markers(self) -> tuple[str, str]:
        """Think-channel markers a client must never see in content, per reasoning parser."""
        parser = _parser(self.reasoning_parser)
        return parser.think_open, parser.think_close


def checks_for(served: ServedModel, names: list[str]) -> list[str]:
    """The checks that apply to this model, in order: ``names`` (the full list) minus the ones its
    capabilities rule out, plus its contract checks."""
    dropped = {"instant", "instant_then_call"} if served.thinking == "always" else set()
    if not served.images:
        dropped |= {"image", "image_url", "image_tools"}
    chosen = [n for n in names if n not in dropped and n not in CONTRACT_NAMES]
    if served.effort_levels:
        chosen.append("reasoning_effort")
    if served.thinking == "always":
        chosen.append("always_thinking")
    chosen.append("video")  # skipped with the reason when the model declares no video
    if served.context_length:
        chosen.append("long_context")
    return chosen


CONTRACT_NAMES = ("reasoning_effort", "always_thinking", "always_thinking_stream_off", "video", "long_context")
