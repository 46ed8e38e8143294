"""The redacting log pump: `python -m kimi_runbooks.deploy.logpump --log F -- CMD ...`.

Server output passes through it line by line into the run folder's log, redacted, so a key
never lands in the run folder even when the server outlives the notebook that started it. It
runs CMD as its child and forwards SIGTERM/SIGINT/SIGHUP, so stopping the pump's process group
stops the server.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..plan.shell import shell_word
from ..procs import die_with_parent
from ..rundir import RunFolder

MODULE = "kimi_runbooks.deploy.logpump"


def pump_command(argv: list[str], log: Path, secret_env: str | None) -> list[str]:
    """argv wrapped by this pump (the python running the project)."""
    pump = [sys.executable, "-m", MODULE, "--log", str(log)]
    if secret_env:
        pump += ["--secret-env", secret_env]
    return pump + ["--"] + argv


def start_pumped(argv: list[str], env: dict[str, str], log: Path, secret_env: str | None) -> subprocess.Popen[bytes]:
    """Start argv behind the log pump, in a new session (its own process group)."""
    return subprocess.Popen(
        pump_command(argv, log, secret_env),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def is_pump(cmdline: list[str] | None) -> bool:
    """Guard against a recycled pid: a process group we stop must be led by this pump."""
    return cmdline is not None and MODULE in cmdline


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command, write its output line by line (redacted) to --log, exit with its code."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("--log", required=True, type=Path)
    parser.add_argument("--secret-env", default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")
    folder = RunFolder(args.log.parent, [args.secret_env])
    with folder.redacting_writer(args.log) as log:
        try:
            child = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent,  # a pump killed with SIGKILL still takes its server down
            )
        except OSError as exc:
            log.write(f"cannot start {shell_word(command[0])}: {exc}\n")
            return 127

        def forward(signum: int, _frame: Any) -> None:
            if child.poll() is None:
                child.send_signal(signum)

        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, forward)
        assert child.stdout is not None
        for raw in iter(child.stdout.readline, b""):
            log.write(raw.decode("utf-8", errors="replace"))
        return child.wait()


if __name__ == "__main__":
    sys.exit(main())
