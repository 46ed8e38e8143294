"""Parse published shell snippets (seed deployment scripts) into commands, flags and env.

A small, dependency-free reader for the kind of shell the seeds publish: `export`s, `unset`s,
`source`s, `for ... do ... done` / `if ... then ... fi` blocks and long launch commands with
backslash continuations.  It is not a shell: it does no expansion; it only tokenizes
(``shlex``, POSIX rules), tracks which exports are in scope, and splits each command into a
program and its flags.

    from seedcmd import parse_shell_commands, substitute, find_commands

    cmds = parse_shell_commands(text)
    (server,) = find_commands(cmds, "sglang.launch_server")
    server.program        # "python3 -m sglang.launch_server"
    server.flags          # {"--model-path": ["$MODEL_PATH"], "--trust-remote-code": [], ...}
    server.env            # exports in scope at that command (top level + enclosing blocks)
    server.local_env      # only the exports made inside the enclosing for/if blocks
    server.repeated_flags # flags that occurred more than once (their values are concatenated)
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

__all__ = [
    "Command",
    "join_continuations",
    "parse_shell_commands",
    "find_commands",
    "substitute",
    "is_flag",
]

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# NAME=(array ...), NAME=`cmd`, NAME=$(cmd): shell-variable set-up lines, not commands
_COMPLEX_ASSIGN = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*=(\(|`|\$\()")
_NUMBER = re.compile(r"^-\d+(\.\d+)?([eE][-+]?\d+)?$")
_PY = re.compile(r"^python(\d+(\.\d+)*)?$")
_SEPARATORS = {";", "&&", "||"}
_OPENERS = {"do", "then"}
_CLOSERS = {"done", "fi"}
_KEYWORDS = {"for", "while", "until", "if", "elif", "else", "break", "continue", "do", "then", "done", "fi"}


@dataclass
class Command:
    """One simple command of a script.

    program: the executable, with ``-m module`` kept for Python (``"python3 -m sglang.launch_server"``)
    flags:   flag -> the values after it, in order of appearance (``[]`` for a bare flag);
             ``--flag=value`` is split into ``--flag: [value]``
    env:     exports in scope when the command runs (top level + enclosing blocks), after unsets,
             plus any ``VAR=value`` prefix assignments of this command
    """

    program: str
    flags: dict[str, list[str]]
    env: dict[str, str]
    local_env: dict[str, str] = field(default_factory=dict)  # exports made inside enclosing blocks only
    positionals: list[str] = field(default_factory=list)  # non-flag words before the first flag
    repeated_flags: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # all words after shlex (program included)
    text: str = ""  # the logical line (continuations joined), as written
    line: int = 0  # 1-based line number where the command starts
    depth: int = 0  # block nesting depth (0 = top level)

    def flag(self, name: str, default: str | None = None) -> str | None:
        """The single value of ``name`` (``""`` for a bare flag), or ``default`` when absent."""
        if name not in self.flags:
            return default
        vals = self.flags[name]
        return " ".join(vals)


def is_flag(token: str) -> bool:
    """True for ``-x`` / ``--long`` words; negative numbers are values, not flags."""
    return token.startswith("-") and token not in ("-", "--") and not _NUMBER.match(token)


def join_continuations(text: str) -> list[tuple[int, str]]:
    """Join backslash-continued lines: [(first line number, logical line)]."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), start=1):
        if not buf:
            start = n
        stripped = raw.rstrip()
        if stripped.endswith("\\") and not stripped.endswith("\\\\"):
            buf.append(stripped[:-1])
            continue
        buf.append(raw)
        out.append((start, " ".join(part.strip() for part in buf).strip()))
        buf = []
    if buf:
        out.append((start, " ".join(part.strip() for part in buf).strip()))
    return out


def substitute(text: str, rules: list[tuple[str, str]]) -> str:
    """Apply (regex, replacement) rules in order, e.g. seed placeholders -> ``{placeholders}``."""
    for pattern, repl in rules:
        text = re.sub(pattern, lambda _m, r=repl: r, text)
    return text


def _split_segments(tokens: list[str]) -> list[list[str]]:
    """Split a tokenized logical line on ; && || (a trailing ';' glued to a word counts too).

    Separators inside ``[[ ... ]]`` tests belong to the test and do not split.
    """
    segs: list[list[str]] = [[]]
    in_test = 0
    for tok in tokens:
        if tok == "[[":
            in_test += 1
        elif tok.rstrip(";") == "]]" and in_test:
            in_test -= 1
        if in_test and tok in _SEPARATORS:
            segs[-1].append(tok)
            continue
        if tok in _SEPARATORS:
            segs.append([])
            continue
        if tok.endswith(";") and len(tok) > 1:
            segs[-1].append(tok[:-1])
            segs.append([])
            continue
        segs[-1].append(tok)
    return [s for s in segs if s]


def _split_program(words: list[str]) -> tuple[str, list[str]]:
    if len(words) >= 3 and _PY.match(words[0].rsplit("/", 1)[-1]) and words[1] == "-m":
        return " ".join(words[:3]), words[3:]
    return words[0], words[1:]


def _parse_flags(rest: list[str]) -> tuple[dict[str, list[str]], list[str], list[str]]:
    flags: dict[str, list[str]] = {}
    positionals: list[str] = []
    repeated: list[str] = []
    current: str | None = None
    for tok in rest:
        if tok == "|":  # a pipeline: the rest belongs to another program; keep it out of the flags
            break
        if is_flag(tok):
            name, eq, value = tok.partition("=") if tok.startswith("--") else (tok, "", "")
            if name in flags:
                repeated.append(name)
            flags.setdefault(name, [])
            if eq:
                flags[name].append(value)
                current = None
            else:
                current = name
            continue
        if current is None:
            positionals.append(tok)
        else:
            flags[current].append(tok)
    return flags, positionals, repeated


def parse_shell_commands(text: str) -> list[Command]:
    """Every simple command of ``text`` except exports, plain assignments and block keywords.

    Tracks ``export NAME=value`` (and ``unset NAME``) per block: exports made inside a
    ``do ... done`` or ``then ... fi`` block go out of scope when the block closes, so each
    command's ``env`` holds the top-level exports plus those of its enclosing blocks.
    Comment lines and trailing comments are dropped.
    """
    scopes: list[dict[str, str]] = [{}]
    commands: list[Command] = []
    for lineno, logical in join_continuations(text):
        if not logical or logical.lstrip().startswith("#") or _COMPLEX_ASSIGN.match(logical):
            continue
        try:
            tokens = shlex.split(logical, comments=True, posix=True)
        except ValueError:  # unbalanced quotes (e.g. a backtick construct): fall back to whitespace
            tokens = logical.split()
        for seg in _split_segments(tokens):
            # block structure
            while seg and seg[0] in _KEYWORDS:
                kw = seg.pop(0)
                if kw in _OPENERS:
                    scopes.append({})
                elif kw in _CLOSERS and len(scopes) > 1:
                    scopes.pop()
                if kw in ("for", "while", "until", "if", "elif"):
                    seg = []  # the condition / loop header is not a command of interest
                    break
            if not seg:
                continue
            if seg[0] == "export":
                for word in seg[1:]:
                    if "=" in word:
                        name, _, value = word.partition("=")
                        scopes[-1][name] = value
                continue
            if seg[0] == "unset":
                for name in seg[1:]:
                    for scope in scopes:
                        scope.pop(name, None)
            prefix_env: dict[str, str] = {}
            while seg and _ASSIGN.match(seg[0]):
                name, _, value = seg.pop(0).partition("=")
                prefix_env[name] = value
            if not seg:
                continue  # a plain shell-variable assignment
            program, rest = _split_program(seg)
            flags, positionals, repeated = _parse_flags(rest)
            env: dict[str, str] = {}
            local: dict[str, str] = {}
            for depth, scope in enumerate(scopes):
                env.update(scope)
                if depth:
                    local.update(scope)
            env.update(prefix_env)
            local.update(prefix_env)
            commands.append(
                Command(
                    program=program,
                    flags=flags,
                    env=env,
                    local_env=local,
                    positionals=positionals,
                    repeated_flags=repeated,
                    tokens=list(seg),
                    text=logical,
                    line=lineno,
                    depth=len(scopes) - 1,
                )
            )
    return commands


def find_commands(commands: list[Command], program_suffix: str) -> list[Command]:
    """Commands whose program ends with ``program_suffix`` (e.g. ``"sglang.launch_server"``)."""
    return [c for c in commands if c.program.endswith(program_suffix)]
