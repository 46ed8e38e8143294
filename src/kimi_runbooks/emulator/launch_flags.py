"""SGLang launch flags read as SGLang 0.5.23's argparse reads them.

The emulator is started with the plan's own server argv, so it must take what SGLang 0.5.23 takes
and refuse what it refuses: an option that release does not have ("unrecognized arguments"), a prefix
of several options (the Kimi-K3 AMD cells' --cuda-graph-max-bs is "ambiguous" in 0.5.23), a switch
given a value, a value of the wrong type or outside the option's choices. The options, their
destinations and value kinds come from the project's record of 0.5.23's parser
(plan/data/sglang_server_options.json, plan/server_options.py); a flag comes back under its
destination (`--tp 8` -> tp_size, `--speculative-draft-model` -> speculative_draft_model_path), as
ServerArgs names it in /server_info.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..catalog.flags import ExtraFlag, parse_extra_args
from ..plan.server_options import OptionTable, ServerOption, option_table, value_problem


class LaunchFlagError(ValueError):
    """A flag SGLang 0.5.23's parser refuses; the message is argparse's, then the fix."""


def read_launch_flags(tokens: Sequence[str], table: OptionTable | None = None) -> dict[str, Any]:
    """``--tp 8 --enable-dp-attention`` -> {"tp_size": 8, "enable_dp_attention": True}; raises
    LaunchFlagError where SGLang's parser stops the launch."""
    table = table or option_table()
    leading, flags = parse_extra_args(list(tokens))
    if leading:
        raise LaunchFlagError(f"unrecognized arguments: {' '.join(leading)}")
    out: dict[str, Any] = {}
    for item in flags:
        name, _, _ = item.flag.partition("=")
        if name == "--api-key":
            raise LaunchFlagError("pass the API key through --api-key-env VAR, never on the command line")
        option, ambiguous = table.find(name)
        if option is None:
            raise LaunchFlagError(_refusal(item, ambiguous, table))
        problem = value_problem(option, item.values)
        if problem:
            raise LaunchFlagError(f"argument {item.written}: {problem}")
        outside = [v for v in item.values if option.choices and v not in option.choices]
        if outside:
            shown = ", ".join(repr(c) for c in option.choices)
            raise LaunchFlagError(f"argument {option.option}: invalid choice: {outside[0]!r} (choose from {shown})")
        out[option.dest] = _value(option, item.values)  # given twice: the last wins, as in argparse
    return out


def _refusal(item: ExtraFlag, ambiguous: list[str], table: OptionTable) -> str:
    if ambiguous:
        said = f"ambiguous option: {item.flag} could match {', '.join(ambiguous)}"
        fix = "write the whole option name (e.g. " + ambiguous[0] + ")"
    else:
        said = f"unrecognized arguments: {item.written}"
        fix = "check the spelling against `python -m sglang.launch_server --help`"
    return (
        f"{said}. SGLang {table.sglang_version}'s parser refuses it the same way and the emulator answers as "
        f"that release; fix: {fix}, or drop the flag when the image you target is newer"
    )


def _value(option: ServerOption, values: tuple[str, ...]) -> Any:
    if option.kind == "switch":  # --no-X is argparse's store_false for dest X
        return not (option.option.startswith("--no-") and not option.dest.startswith("no_"))
    typed = [_typed(option.kind, v) for v in values]
    if option.nargs is None or (option.nargs == "?" and len(typed) == 1):
        return typed[0]
    return typed if typed or option.nargs != "?" else True


def _typed(kind: str, text: str) -> Any:
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "human_int" and text.isdigit():
        return int(text)
    return text
