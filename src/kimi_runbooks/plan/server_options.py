"""`--extra-arg` values checked the way SGLang's argument parser will read them.

SGLang parses its command line with argparse (ServerArgs.add_cli_args in
python/sglang/srt/server_args.py): `--max-running-requests abc`, `--enable-metrics=1` or a
`--chunked-prefill-size` with no value end the launch with a usage error before any weight
loads, so the planner refuses them first, naming the option and what it takes. The table of
options and value types is generated from SGLang itself (data/sglang_server_options.json, by
tests/contract/regen_server_options.py, and checked against the installed SGLang by the test
suite). Options and choices vary between SGLang releases, so an option the table does not know,
or a value outside its choices, is a warning; a value of the wrong type is an error.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..catalog.flags import ExtraFlag
from .rules import RuleResult

DATA_FILE = Path(__file__).with_name("data") / "sglang_server_options.json"
_HUMAN_INT = re.compile(r"\d+(?:\.\d+)?(?:k|M|G|T)|\d+(?:Ki|Mi|Gi|Ti)")
"""SGLang's human_readable_int suffixes: SI (decimals allowed) or IEC; anything else must be an int()."""
KIND_TEXT = {
    "int": "a whole number",
    "float": "a number",
    "human_int": "a whole number, optionally with a k/M/G/T or Ki/Mi/Gi/Ti suffix",
    "json": "a JSON value",
}
EXAMPLE = {"int": "64", "float": "0.5", "human_int": "128k", "json": "'{}'"}


@dataclass(frozen=True)
class ServerOption:
    option: str
    dest: str
    kind: str  # int | float | human_int | json | str | switch | other
    nargs: str | None = None  # argparse nargs when not one value: ?, *, + or a count
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class OptionTable:
    sglang_version: str
    source: str
    options: dict[str, ServerOption]
    allow_abbrev: bool = True

    def find(self, flag: str) -> tuple[ServerOption | None, list[str]]:
        """The option `flag` names, exactly or as argparse's unique prefix; else (None, the
        options it is an ambiguous prefix of)."""
        if flag in self.options:
            return self.options[flag], []
        if not (self.allow_abbrev and flag.startswith("--")):
            return None, []
        matches = sorted({o for o in self.options if o.startswith(flag)})
        dests = {self.options[o].dest for o in matches}
        if len(dests) == 1:
            return self.options[matches[0]], []
        return None, matches


@lru_cache(maxsize=1)
def option_table(path: Path = DATA_FILE) -> OptionTable:
    data: dict[str, Any] = json.loads(path.read_text())
    options = {
        option: ServerOption(
            option=option,
            dest=entry["dest"],
            kind=entry["kind"],
            nargs=entry.get("nargs"),
            choices=tuple(entry.get("choices", ())),
        )
        for option, entry in data["options"].items()
    }
    return OptionTable(data["sglang_version"], data["source"], options, bool(data.get("allow_abbrev", True)))


def read_extra_options(
    extra: list[ExtraFlag], table: OptionTable | None = None
) -> tuple[list[ExtraFlag], list[RuleResult]]:
    """The extra flags as SGLang's parser reads them, and what it would make of them.

    A flag written as a unique prefix (`--max-running=8`) comes back under the option's full
    name, so the plan's own copy of that option is replaced and the predictor sees it (`written`
    keeps the user's spelling for messages). One RuleResult per flag the parser would refuse
    (error) or that this SGLang release does not know (warning)."""
    table = table or option_table()
    flags: list[ExtraFlag] = []
    results: list[RuleResult] = []
    for item in extra:
        option, ambiguous = table.find(item.flag)
        if option is None:
            flags.append(item)
            results.append(_unknown(item, ambiguous, table))
            continue
        flags.append(item if option.option == item.flag else ExtraFlag(option.option, item.values, item.written))
        problem = value_problem(option, item.values)
        if problem:
            results.append(_result("extra-arg-value", "error", item, problem, _fix(option), table))
            continue
        outside = [v for v in item.values if option.choices and v not in option.choices]
        if outside:
            shown = ", ".join(option.choices)
            results.append(
                _result(
                    "extra-arg-choice",
                    "warning",
                    item,
                    f"SGLang {table.sglang_version} accepts only {shown} for {option.option}, not {outside[0]!r}",
                    f"use one of {shown}, unless the server's SGLang release adds {outside[0]!r}",
                    table,
                )
            )
    return flags, results


def value_problem(option: ServerOption, values: tuple[str, ...]) -> str:
    """Why SGLang's parser refuses these values for the option; "" when it takes them."""
    name = option.option
    if option.kind == "switch":
        if values:
            return f"{name} is a switch and takes no value (got {' '.join(values)!r}); argparse refuses it"
        return ""
    count_problem = _count_problem(option, len(values))
    if count_problem:
        return count_problem
    for value in values:
        if not _parses(option.kind, value):
            return f"{name} takes {KIND_TEXT[option.kind]}; {value!r} is not one, and SGLang's parser refuses it"
    return ""


def _count_problem(option: ServerOption, count: int) -> str:
    nargs, name = option.nargs, option.option
    if nargs is None and count != 1:
        return f"{name} takes one value (got {count})"
    if nargs == "+" and count == 0:
        return f"{name} takes one or more values (got none)"
    if nargs == "?" and count > 1:
        return f"{name} takes at most one value (got {count})"
    if nargs is not None and nargs.isdigit() and count != int(nargs):
        return f"{name} takes {nargs} values (got {count})"
    return ""


def _parses(kind: str, value: str) -> bool:
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        elif kind == "json":
            json.loads(value)
        elif kind == "human_int" and not _HUMAN_INT.fullmatch(value.strip()):
            int(value)
    except ValueError:
        return False
    return True


def _fix(option: ServerOption) -> str:
    if option.kind == "switch":
        return f"give {option.option} alone, with no value"
    example = EXAMPLE.get(option.kind, "<value>")
    return f"give {option.option} {KIND_TEXT.get(option.kind, 'its value')}, e.g. --extra-arg={option.option}={example}"


def _unknown(item: ExtraFlag, ambiguous: list[str], table: OptionTable) -> RuleResult:
    if ambiguous:
        listed = ", ".join(ambiguous[:6]) + (", ..." if len(ambiguous) > 6 else "")
        message = (
            f"{item.flag} is the start of several SGLang {table.sglang_version} options ({listed}); "
            "argparse refuses an ambiguous prefix"
        )
        fix = "write the whole option name"
    else:
        message = (
            f"SGLang {table.sglang_version}'s server has no option {item.flag}; "
            "its parser would stop with 'unrecognized arguments'"
        )
        fix = "check the spelling against `python -m sglang.launch_server --help` of the server's SGLang release"
    return _result("extra-arg-unknown", "warning", item, message, fix, table)


def _result(rule_id: str, severity: str, item: ExtraFlag, problem: str, fix: str, table: OptionTable) -> RuleResult:
    return RuleResult(
        id=rule_id,
        severity=severity,
        kind="rule",
        message=f"--extra-arg {item.written}: {problem}",
        fix=fix,
        source=f"argparse options of SGLang {table.sglang_version}, ServerArgs.add_cli_args in "
        "python/sglang/srt/server_args.py (sgl-project/sglang)",
    )
