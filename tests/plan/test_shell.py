"""plan/shell.py: shlex.quote semantics for every value; only the project's own references expand."""

from __future__ import annotations

import copy
import pickle
import subprocess
from pathlib import Path

import pytest

from kimi_runbooks.plan.shell import (
    Ref,
    UnsetVariable,
    Word,
    args_to_argv,
    assignment,
    env_ref,
    expand_word,
    join_word,
    render_script,
    shell_command,
    shell_word,
)

HOSTILE = [
    "${HOME}",
    "$(touch pwned)",
    "`touch pwned`",
    "it's",
    'say "hi"',
    "a\\b",
    "semi;colon && touch pwned",
    "new\nline",
    "!event",
    "*glob?",
    "",
    "~",
    "--flag=$(touch pwned)${HOME}`touch pwned`",
]


def _bash_words(text: str, tmp_path: Path, env: dict[str, str] | None = None) -> list[str]:
    proc = subprocess.run(
        ["bash", "-c", f"printf '%s\\0' {text}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "HOME": "/home/test", **(env or {})},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("\0")[:-1]


@pytest.mark.parametrize("value", HOSTILE)
def test_every_user_value_reaches_bash_literally(value: str, tmp_path: Path) -> None:
    assert _bash_words(shell_word(value), tmp_path) == [value]
    assert not (tmp_path / "pwned").exists()


def test_a_word_expands_only_its_references(tmp_path: Path) -> None:
    word = Word("http://", Ref("PREFILL_IP", "set PREFILL_IP to the prefill address"), ":8000/$(touch pwned)")
    assert str(word) == "http://${PREFILL_IP:?set PREFILL_IP to the prefill address}:8000/$(touch pwned)"
    assert _bash_words(shell_word(word), tmp_path, {"PREFILL_IP": "10.0.0.1"}) == [
        "http://10.0.0.1:8000/$(touch pwned)"
    ]
    assert not (tmp_path / "pwned").exists()
    assert expand_word(word, {"PREFILL_IP": "10.0.0.1"}) == "http://10.0.0.1:8000/$(touch pwned)"
    with pytest.raises(UnsetVariable, match="PREFILL_IP is not set"):
        expand_word(word, {})


def test_plain_strings_are_never_expanded() -> None:
    assert expand_word("${HOME}", {"HOME": "/root"}) == "${HOME}"
    assert shell_word("${HOME}") == "'${HOME}'"


def test_words_survive_copies_and_joins() -> None:
    word = env_ref("NODE0_IP", "NODE0_IP to the address of node 0")
    joined = join_word(word, ":5000")
    assert isinstance(joined, Word) and joined.refs == word.refs
    for clone in (copy.copy(joined), copy.deepcopy(joined), pickle.loads(pickle.dumps(joined))):
        assert isinstance(clone, Word) and clone.parts == joined.parts
    assert not isinstance(join_word("a", 1), Word)


@pytest.mark.parametrize("name", ["A B", "1ABC", "A=1 touch pwned; B", "", "X-Y"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="not a valid environment variable name"):
        assignment(name, "x")
    with pytest.raises(ValueError):
        Ref(name)


@pytest.mark.parametrize("hint", ["node 0's address", "a}b", "$(x)", "`x`", 'a"b'])
def test_hints_cannot_hold_shell_syntax(hint: str) -> None:
    with pytest.raises(ValueError, match="bash would interpret"):
        Ref("X", hint)


def test_command_env_prefix_and_script_exports(tmp_path: Path) -> None:
    env = {"SGLANG_X": "$(touch pwned)", "URL": join_word("tcp://", env_ref("PREFILL_IP"), ":1")}
    line = shell_command(["printf", "%s\\n", "a b"], env)
    assert line.startswith("SGLANG_X='$(touch pwned)' URL=tcp://\"${PREFILL_IP}\":1 printf")
    script = render_script([], ["http_proxy"], [], env, ["env"])
    path = tmp_path / "s.sh"
    path.write_text(script)
    proc = subprocess.run(
        ["bash", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PREFILL_IP": "1.2.3.4"},
    )
    assert proc.returncode == 0, proc.stderr
    assert "SGLANG_X=$(touch pwned)" in proc.stdout.splitlines()
    assert "URL=tcp://1.2.3.4:1" in proc.stdout.splitlines()
    assert not (tmp_path / "pwned").exists()
    assert "# shellcheck disable=SC2016" in script


def test_args_to_argv_attaches_values_that_look_like_flags() -> None:
    assert args_to_argv([("--a", True), ("--b", "-1"), ("--c", "--x"), ("--d", [1, 2]), ("--e", None)]) == [
        "--a",
        "--b",
        "-1",
        "--c=--x",
        "--d",
        "1",
        "2",
    ]
