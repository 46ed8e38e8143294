"""Contract: the emulator refuses a current cookbook cell's server argv exactly where SGLang 0.5.23's
own parser refuses it, with SGLang's words, and accepts the rest (issue 41 item 6).

Every node's argv of every current Kimi-K3 and Kimi-K2.6 cell (tests/support/cookbook_cells.py) is
judged in one run of check_server_argv.py by the bench env's SGLang (argparse, then the model-free
resolution steps) and by the emulator's parser in-process (emulator/cli.py parse_launch). A refusal
at SGLang's parse stage must be the emulator's refusal, message included; anything SGLang's parser
accepts the emulator accepts. Resolution steps past the parser that need the checkpoint run in
neither (the emulator resolves only speculative decoding, emulator/speculative.py).

Heavy: needs the bench tool env (SGLang's import takes 10-20 s; the run about 10 s more).
"""

from __future__ import annotations

import pytest
from test_planned_argv import run_checker

from kimi_runbooks.emulator.cli import parse_launch
from tests.support.cookbook_cells import cell_commands

pytestmark = pytest.mark.heavy


def _emulator_refusal(args: list[str], capsys: pytest.CaptureFixture[str]) -> str | None:
    try:
        parse_launch(args)
    except SystemExit:
        return capsys.readouterr().err
    return None


def test_the_emulator_refuses_a_current_cell_exactly_where_sglang_does(
    bench_python: str, capsys: pytest.CaptureFixture[str], record_property: object
) -> None:
    commands = cell_commands()
    items = [
        {"id": c.label, "argv": c.flags, "env": dict(c.launch.launch_env), "arch": c.launch.platform.arch}
        for c in commands
    ]
    results = run_checker(bench_python, items)
    mismatched, refused = [], []
    for command, result in zip(commands, results, strict=True):
        assert result["status"] != "error", f"{command.label}: the checker could not judge it: {result}"
        sglang = result["message"].partition("error: ")[2] if result["stage"] == "parse" else None
        if result["status"] == "rejected" and sglang is not None:
            refused.append(f"{command.label}: {sglang}")
        emulator = _emulator_refusal(command.emulator_args(), capsys)
        if (sglang is None) != (emulator is None) or (sglang and sglang.strip() not in str(emulator)):
            mismatched.append(f"{command.label}: SGLang {sglang or 'accepts'}; emulator {emulator or 'accepts'}")
    if callable(record_property):
        record_property(
            "summary", f"{len(commands)} cell commands; SGLang 0.5.23 refuses {len(refused)}:\n" + "\n".join(refused)
        )
    assert not mismatched, "\n".join(mismatched)
