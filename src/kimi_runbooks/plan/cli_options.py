"""PlanConfig's fields as `kimi-runbooks plan` options: one declaration per knob.

Each field of `PlanConfig` becomes `--field-name` with its type, default and help taken from the
field itself (its docstring is its description); `CLI_EXTRAS` only says what a field's type cannot:
an alias, a singular name for a repeatable option, a `--no-...` that unsets it. A new knob on
PlanConfig is on the command line without touching the CLI.
"""

from __future__ import annotations

import argparse
import types
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic.fields import FieldInfo

from .config import PlanConfig


class CliInputError(ValueError):
    """A command-line value that cannot become a PlanConfig field; the message says the fix."""


@dataclass(frozen=True)
class CliExtra:
    """What a field's type does not say about its option."""

    flags: tuple[str, ...] = ()
    """The option's spellings (default: --field-name)."""
    negate: str | None = None
    """A switch that sets the field to None (for a knob whose default is a value)."""
    required: bool = False
    metavar: str | None = None
    help: str | None = None
    """Help when the field's own description is not the one a command-line user needs."""
    hidden: bool = field(default=False)


CLI_EXTRAS: dict[str, CliExtra] = {
    "platform": CliExtra(required=True),
    "nnodes": CliExtra(flags=("--nnodes", "--nodes")),
    "node_ips": CliExtra(flags=("--node-ip",), metavar="IP"),
    "extra_args": CliExtra(flags=("--extra-arg",), metavar="ARG"),
    "allow": CliExtra(metavar="RULE_ID"),
    "env": CliExtra(metavar="NAME=VALUE"),
    "device_ids": CliExtra(metavar="4,5,6,7"),
    "reasoning_parser": CliExtra(negate="--no-reasoning-parser"),
    "tool_call_parser": CliExtra(negate="--no-tool-call-parser"),
}


def _shown_default(info: FieldInfo) -> Any:
    """The default worth printing in --help, or None: a required field has none, and an empty list or
    dict (a default_factory), None, a bool switch or the 'default' marker say nothing to a user."""
    if info.is_required():
        return None
    default = info.get_default(call_default_factory=True)
    if default in (None, "default") or isinstance(default, bool) or default in ([], {}):
        return None
    return default


def _help(name: str, info: FieldInfo, extra: CliExtra) -> str:
    text = extra.help or (info.description or "").strip()
    text = " ".join(text.split())
    default = _shown_default(info)
    if default is not None:
        text = f"{text} (default: {default})" if text else f"default: {default}"
    return text.replace("%", "%%")


def _inner(annotation: Any) -> Any:
    """`int | None` -> int; anything else unchanged."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    """One option per PlanConfig field, typed as the field is."""
    for name, info in PlanConfig.model_fields.items():
        extra = CLI_EXTRAS.get(name, CliExtra())
        if extra.hidden:
            continue
        flags = extra.flags or ("--" + name.replace("_", "-"),)
        kind = _inner(info.annotation)
        origin = typing.get_origin(kind)
        common: dict[str, Any] = {"dest": name, "help": _help(name, info, extra)}
        if extra.metavar:
            common["metavar"] = extra.metavar
        if typing.get_origin(kind) is typing.Literal:
            choices = [str(c) for c in typing.get_args(kind)]
            parser.add_argument(*flags, choices=choices, default=None, required=extra.required, **common)
        elif kind is bool:
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, default=None, **common)
        elif origin is list and typing.get_args(kind) == (int,):
            parser.add_argument(*flags, default=None, **common)  # comma-separated, read by _device_ids
        elif origin in (list, dict):
            common["help"] += " (repeatable)"
            parser.add_argument(*flags, action="append", default=None, **common)
        else:
            parser.add_argument(*flags, type=kind, default=None, required=extra.required, **common)
        if extra.negate:
            parser.add_argument(
                extra.negate, action="store_true", dest=f"{name}__unset", help=f"plan without --{flags[0][2:]}"
            )


def _env_pairs(items: list[str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq:
            raise CliInputError(f"--env {item!r} has no '='. Fix: pass --env NAME=VALUE, e.g. --env SGLANG_USE_AITER=1")
        env[name] = value
    return env


def _device_ids(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise CliInputError(
            f"--device-ids {text!r} is not a list of indices. "
            "Fix: pass comma-separated numbers, e.g. --device-ids 4,5,6,7"
        ) from None


def config_from_args(args: argparse.Namespace) -> PlanConfig:
    """The PlanConfig the options describe; an option left out keeps the field's default."""
    fields: dict[str, Any] = {}
    for name in PlanConfig.model_fields:
        value = getattr(args, name, None)
        if getattr(args, f"{name}__unset", False):
            fields[name] = None
        elif value is not None:
            fields[name] = value
    if "env" in fields:
        fields["env"] = _env_pairs(fields["env"])
    if "device_ids" in fields:
        fields["device_ids"] = _device_ids(fields["device_ids"])
    return PlanConfig(**fields)
