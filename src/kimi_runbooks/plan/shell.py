"""Render argv and scripts for bash with `shlex.quote` semantics.

Every value is literal: a user's `${HOME}`, `$(...)` or backtick reaches the server as typed and
is never run. The one exception is a `Word`, which only the project builds: literal text plus
`Ref`s to environment variables with validated names (the API key `${NAME}`, placeholders such
as `${MODEL_PATH:?set MODEL_PATH to the weights directory}`). A Word's str value is its bash text,
so it reads the same in argv, JSON and messages; rendering keeps its references expandable
(in double quotes) and quotes its literal parts.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..catalog.values import is_env_name

if TYPE_CHECKING:
    from ..catalog.values import ArgValue

_HINT = re.compile(r"[A-Za-z0-9 _.,/-]*")
"""Hint text inside `${NAME:?hint}`: nothing bash would expand or that could end the word."""


@dataclass(frozen=True)
class Ref:
    """A reference to the environment variable `name`; with a hint, bash stops when it is unset."""

    name: str
    hint: str | None = None

    def __post_init__(self) -> None:
        if not is_env_name(self.name):
            raise ValueError(f"'{self.name}' is not a valid environment variable name")
        if self.hint is not None and not _HINT.fullmatch(self.hint):
            raise ValueError(f"hint {self.hint!r} holds characters bash would interpret")

    @property
    def text(self) -> str:
        return "${" + self.name + (f":?{self.hint}" if self.hint is not None else "") + "}"


Part = str | Ref


class Word(str):
    """A shell word the project generated: literal parts and `Ref`s. Its str value is the bash
    text (`http://${PREFILL_IP:?...}:8000`); `shell_word` renders it, `expand_word` fills it."""

    parts: tuple[Part, ...]

    def __new__(cls, *parts: Part) -> Word:
        flat: list[Part] = []
        for part in parts:
            pieces = part.parts if isinstance(part, Word) else (part,)
            for piece in pieces:
                if isinstance(piece, str) and flat and isinstance(flat[-1], str):
                    flat[-1] = flat[-1] + piece
                elif piece != "":
                    flat.append(piece if isinstance(piece, Ref) else str(piece))
        word = super().__new__(cls, "".join(p.text if isinstance(p, Ref) else p for p in flat))
        word.parts = tuple(flat)
        return word

    def __getnewargs__(self) -> tuple[Part, ...]:  # type: ignore[override]
        return self.parts

    @property
    def refs(self) -> list[Ref]:
        return [p for p in self.parts if isinstance(p, Ref)]


def env_ref(name: str, hint: str | None = None) -> Word:
    """`${NAME}`, or `${NAME:?set <hint>}` so a script stops when the variable is unset."""
    return Word(Ref(name, None if hint is None else f"set {hint}"))


def join_word(*parts: Any) -> str:
    """Concatenate values into one word: a Word when any part is a Word, else a plain str."""
    if any(isinstance(p, Word) for p in parts):
        return Word(*(p if isinstance(p, Word) else str(p) for p in parts))
    return "".join(str(p) for p in parts)


def shell_word(value: str) -> str:
    """One bash word: literal text quoted as shlex.quote does, a Word's references expandable."""
    if not isinstance(value, Word) or not value.refs:
        return shlex.quote(str(value))
    return "".join(f'"{p.text}"' if isinstance(p, Ref) else shlex.quote(p) for p in value.parts)


def shell_join(argv: Iterable[str]) -> str:
    return " ".join(shell_word(a) for a in argv)


def shell_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command as one line to paste into bash: `NAME=value ... argv`."""
    prefix = [assignment(k, v) for k, v in (env or {}).items()]
    return " ".join(prefix + [shell_word(a) for a in argv])


def assignment(name: str, value: str) -> str:
    """`NAME=value` for bash; a name bash would not read as a variable is refused."""
    if not is_env_name(name):
        raise ValueError(f"'{name}' is not a valid environment variable name")
    return f"{name}={shell_word(value)}"


class UnsetVariable(KeyError):
    """A reference in a Word names a variable that is not set."""


def expand_word(value: str, environ: Mapping[str, str]) -> str:
    """A Word with its references filled from `environ`; any other value is returned as is."""
    if not isinstance(value, Word):
        return value
    out = []
    for part in value.parts:
        if isinstance(part, Ref):
            if part.name not in environ:
                hint = f" ({part.hint})" if part.hint else ""
                raise UnsetVariable(f"environment variable {part.name} is not set{hint}")
            out.append(environ[part.name])
        else:
            out.append(part)
    return "".join(out)


def args_to_argv(args: Sequence[tuple[str, ArgValue | None]]) -> list[str]:
    """(flag, value) pairs as argv: True is a bare flag, a list several values. A single value
    that looks like a flag is attached with `=`, so SGLang's argparse reads it as the value."""
    argv: list[str] = []
    for flag, value in args:
        if value is False or value is None:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list):
            argv += [flag, *(format_value(v) for v in value)]
        elif _looks_like_flag(text := format_value(value)):
            argv.append(join_word(flag, "=", text))
        else:
            argv += [flag, text]
    return argv


def _looks_like_flag(text: str) -> bool:
    if not text.startswith("-") or text == "-":
        return False
    try:
        float(text)
    except ValueError:
        return True
    return False


def format_value(value: Any) -> str:
    if isinstance(value, str):
        return value  # keeps a Word a Word
    if isinstance(value, float) and value.is_integer() and abs(value) >= 1:
        return str(int(value))
    return str(value)


def render_script(
    host_setup: list[str],
    unset_env: list[str],
    sources: list[str],
    env: Mapping[str, str],
    argv: Sequence[str],
) -> str:
    """A node script: host set-up lines (params/deployments, trusted), unsets, sourced vendor
    scripts, exported env, then `exec` of the quoted argv."""
    lines = ["set -euo pipefail", *host_setup]
    for name in unset_env:
        lines.append(f"unset {shlex.quote(_checked_name(name))}")
    for path in sources:
        lines += ["# shellcheck source=/dev/null", f"source {shlex.quote(path)}"]
    lines += [f"export {assignment(k, v)}" for k, v in env.items()]
    lines.append("exec " + shell_join(argv))
    return script_text(lines)


_LITERAL_DOLLAR = re.compile(r"'[^']*[$`][^']*'")


def script_text(body: list[str], header: Sequence[str] = ()) -> str:
    """A bash script: shebang, the generated-file note, `header` lines (e.g. #SBATCH), then
    `body`. When a literal value holds `$` or a backtick, shellcheck's SC2016 note ("expressions
    don't expand in single quotes") is switched off for the file: they must not expand."""
    lines = ["#!/usr/bin/env bash"]
    if any(_LITERAL_DOLLAR.search(line) for line in body):
        lines.append("# shellcheck disable=SC2016  # values with $ or backticks are literal on purpose")
    lines += ["# generated by kimi-runbooks: do not edit, re-plan instead", *header, *body]
    return "\n".join(lines) + "\n"


def _checked_name(name: str) -> str:
    if not is_env_name(name):
        raise ValueError(f"'{name}' is not a valid environment variable name")
    return name
