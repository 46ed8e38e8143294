"""The planner's args step (cell -> knobs -> **args** -> rules -> LaunchPlan): the server's SGLang
arguments, as the cookbook cell or the resolved knobs give them, with extra arguments folded in as
SGLang reads them (catalog/flags.py: the last occurrence wins).

Before the cell is chosen, `read_user_args` reads the user's `extra_args`: a knob's flag is refused
with the knob to use (its value still set on the knob, so the rules judge it), SGLang options the
planner reads (server_options.py) are taken out, and the rest waits for `launch_args`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..catalog import ArgValue, Model, Platform
from ..catalog.flags import ExtraFlag, canonical_flag, merge_args, parse_extra_args
from .config import PlanConfig
from .cookbook import CellChoice, cell_args
from .knobs import ResolvedKnobs, apply_knob_flags, server_args
from .rules import RuleResult
from .server_options import read_extra_options

Args = list[tuple[str, ArgValue | None]]
"""A server's flags in order, each with its value (None: a switch)."""


@dataclass(frozen=True)
class UserArgs:
    """The user's `extra_args`, read: the config with the knobs they set, the words before the
    first flag, the flags left to fold in and what was refused."""

    config: PlanConfig
    leading: list[str]
    extra: list[ExtraFlag]
    refused: list[RuleResult]


def read_user_args(config: PlanConfig) -> UserArgs:
    leading, extra = parse_extra_args(config.extra_args)
    config, extra, refused = apply_knob_flags(config, extra)
    extra, unread = read_extra_options(extra)
    return UserArgs(config, leading, extra, [*refused, *unread])


def launch_args(
    user: UserArgs, config: PlanConfig, choice: CellChoice, knobs: ResolvedKnobs, model: Model, platform: Platform
) -> Args:
    """The cell's flags (for the user's own knobs) or the knobs' flags with the recipe's extra
    arguments (when it is this model's: its snippet's, or the platform's for its default model),
    then the user's extra flags."""
    if choice.cell is not None:
        parsers = {"--reasoning-parser": knobs.reasoning_parser, "--tool-call-parser": knobs.tool_call_parser}
        return merge_args(cell_args(choice.cell, user.config, knobs.model_path, parsers), user.extra)
    recipe = model.recipe_on(platform)
    _, recipe_extra = parse_extra_args(recipe.extra_args if recipe.model == model.id else [])
    return merge_args(server_args(config, knobs, model, platform.vendor), [*recipe_extra, *user.extra])


def arg_lookup(args: Args) -> dict[str, ArgValue | None]:
    """Each flag under its canonical spelling, as the rules look them up."""
    return {canonical_flag(flag): value for flag, value in args}
