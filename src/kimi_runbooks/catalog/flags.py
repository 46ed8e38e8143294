"""SGLang's spellings of a flag, and `--extra-arg` folded into a plan as SGLang reads it.

SGLang parses its command line with argparse (python/sglang/srt/server_args.py,
`prepare_server_args`): `--flag=value` and `--flag value` are the same, a flag given twice keeps
its last value, several spellings share one destination (`--tp-size`, `--tensor-parallel-size`)
and a unique prefix of a long option is accepted (argparse's allow_abbrev). The planner folds
extra arguments into the plan's own the same way, so the command holds each flag once and the
rules see the value SGLang would use. A flag that a knob owns is not an extra argument: `knob_of`
names the knob, and the planner refuses it with the knob to use instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .values import ArgValue

FLAG_ALIASES = {
    "--tp-size": "--tp",
    "--tensor-parallel-size": "--tp",
    "--dp-size": "--dp",
    "--data-parallel-size": "--dp",
    "--ep-size": "--ep",
    "--expert-parallel-size": "--ep",
    "--pp-size": "--pp",
    "--pipeline-parallel-size": "--pp",
    "--model": "--model-path",
    "--nccl-init-addr": "--dist-init-addr",
    "--speculative-draft-model": "--speculative-draft-model-path",
}
"""SGLang accepts several spellings of one flag (0.5.23's option strings); comparisons use the
canonical one."""


def flag_value(argv: Sequence[str], name: str) -> str | None:
    """The value of `name` in an argv, as `--flag value` or `--flag=value` (the first; None when absent):
    for reading a command this project wrote (a plan's, bench_serving's), not for parsing a user's."""
    for i, word in enumerate(argv):
        if word == name and i + 1 < len(argv):
            return str(argv[i + 1])
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def canonical_flag(flag: str) -> str:
    return FLAG_ALIASES.get(flag, flag)


@dataclass(frozen=True)
class KnobFlag:
    """A flag a PlanConfig knob owns; `cli` is the `kimi-runbooks plan` option, when there is one."""

    knob: str
    cli: str | None
    switch: bool = False  # store_true: takes no value
    applied: bool = True  # False: the plan derives it (per-node flags), so an extra arg is only refused


KNOB_OWNED: dict[str, KnobFlag] = {
    "--model-path": KnobFlag("model_path", "--model-path"),
    "--served-model-name": KnobFlag("served_model_name", None),
    "--tp": KnobFlag("tp", "--tp"),
    "--dp": KnobFlag("dp", "--dp"),
    "--ep": KnobFlag("ep", "--ep"),
    "--pp": KnobFlag("pp", "--pp"),
    "--enable-dp-attention": KnobFlag("enable_dp_attention", "--enable-dp-attention", switch=True),
    "--quantization": KnobFlag("quantization", "--quantization"),
    "--kv-cache-dtype": KnobFlag("kv_cache_dtype", "--kv-cache-dtype"),
    "--mem-fraction-static": KnobFlag("mem_fraction_static", "--mem-fraction-static"),
    "--context-length": KnobFlag("context_length", "--context-length"),
    "--reasoning-parser": KnobFlag("reasoning_parser", None),
    "--tool-call-parser": KnobFlag("tool_call_parser", None),
    "--speculative-draft-model-path": KnobFlag("draft_model_path", None),
    "--trust-remote-code": KnobFlag("trust_remote_code", None, switch=True),
    "--api-key": KnobFlag("api_key_env", "--api-key-env", applied=False),
    "--host": KnobFlag("host", "--host"),
    "--port": KnobFlag("port", "--port"),
    "--nnodes": KnobFlag("nnodes", "--nnodes"),
    "--node-rank": KnobFlag("nnodes", "--nnodes", applied=False),
    "--dist-init-addr": KnobFlag("node_ips", "--node-ip", applied=False),
}
"""Canonical flag -> the knob that owns it."""

_OWNED_SPELLINGS = sorted({*KNOB_OWNED, *(alias for alias, canon in FLAG_ALIASES.items() if canon in KNOB_OWNED)})


def knob_of(flag: str) -> tuple[str, KnobFlag] | None:
    """(canonical flag, knob) when `flag` (without `=value`) sets a knob's flag: any spelling, or a
    prefix argparse would expand to one (no other SGLang option is such a prefix; a test checks
    this against SGLang's own parser)."""
    canon = canonical_flag(flag)
    if canon in KNOB_OWNED:
        return canon, KNOB_OWNED[canon]
    if flag.startswith("--") and len(flag) > 3:
        for spelling in _OWNED_SPELLINGS:
            if spelling.startswith(flag):
                owner = canonical_flag(spelling)
                return owner, KNOB_OWNED[owner]
    return None


@dataclass(frozen=True)
class ExtraFlag:
    """One flag of the extra arguments with the values after it, and how the user wrote it."""

    flag: str
    values: tuple[str, ...]
    written: str

    @property
    def value(self) -> ArgValue:
        if not self.values:
            return True
        return self.values[0] if len(self.values) == 1 else list(self.values)


def is_flag_token(token: str) -> bool:
    """`-x` / `--long`; negative numbers are values, as argparse reads them."""
    if not token.startswith("-") or token in ("-", "--"):
        return False
    try:
        float(token)
    except ValueError:
        return True
    return False


def parse_extra_args(tokens: Sequence[str]) -> tuple[list[str], list[ExtraFlag]]:
    """Extra arguments -> (words before the first flag, the flags with their values in order)."""
    leading: list[str] = []
    flags: list[ExtraFlag] = []
    for token in tokens:
        if is_flag_token(token):
            name, eq, inline = token.partition("=")
            flags.append(ExtraFlag(name, (inline,) if eq else (), token))
        elif flags:
            last = flags[-1]
            flags[-1] = ExtraFlag(last.flag, (*last.values, token), f"{last.written} {token}")
        else:
            leading.append(token)
    return leading, flags


def merge_args(
    args: list[tuple[str, ArgValue | None]], extra: Sequence[ExtraFlag]
) -> list[tuple[str, ArgValue | None]]:
    """The plan's (flag, value) list with the extra flags folded in: a flag already there takes the
    extra value in place (the last occurrence wins, as in SGLang), a new flag is appended."""
    merged = list(args)
    for item in extra:
        canon = canonical_flag(item.flag)
        for i, (flag, _) in enumerate(merged):
            if canonical_flag(flag) == canon:
                merged[i] = (flag, item.value)
                break
        else:
            merged.append((item.flag, item.value))
    return merged
