"""Run generated commands and scripts for real, with stub programs that record what reaches them.

`StubBin(tmp)` writes executables (sglang, python, python3, docker, tee, sysctl, srun, scontrol,
getent) into a folder; each appends one JSON line {prog, argv, env, cwd} to calls.jsonl. `srun`
records, then runs the command after its options (so an sbatch script's pumped server command
runs too); `scontrol show hostnames` prints node-0..node-N; `getent ahostsv4 node-I` answers
10.9.0.I. `source` is replaced by an exported bash function that records the path, so a
script's vendor `source /usr/local/Ascend/...` lines run unmodified.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_RECORDER = """#!{python}
import json, os, sys
prog = os.path.basename(sys.argv[0])
line = json.dumps({{"prog": prog, "argv": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}) + "\\n"
# one write(2) on an O_APPEND descriptor: the nodes' stubs run at once, and a buffered file would
# split a line longer than its buffer into several writes that another node's line can land between
fd = os.open(os.environ["STUB_CALLS"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.write(fd, line.encode())
os.close(fd)
args = sys.argv[1:]
if prog == "srun":
    while args and args[0].startswith("-"):
        args = args[1:]
    os.execvp(args[0], args)
if prog == "scontrol":
    print("\\n".join(f"node-{{i}}" for i in range(int(os.environ.get("STUB_NODES", "1")))))
if prog == "getent":
    print(f"10.9.0.{{args[-1].rsplit('-', 1)[-1]}}    STREAM {{args[-1]}}")
"""

STUB_PROGRAMS = ("sglang", "python", "python3", "docker", "tee", "sysctl", "srun", "scontrol", "getent")
SOURCE_FUNCTION = '() { printf "%s\\n" "$1" >> "$STUB_SOURCED"; }'


class StubBin:
    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "stub-bin"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.calls_file = tmp / "calls.jsonl"
        self.sourced_file = tmp / "sourced.txt"
        self.cwd = tmp / "cwd"
        self.cwd.mkdir(exist_ok=True)
        for name in STUB_PROGRAMS:
            path = self.dir / name
            path.write_text(_RECORDER.format(python=sys.executable))
            path.chmod(0o755)

    def environ(self, **extra: str) -> dict[str, str]:
        """A clean environment: the stubs first on PATH, the recorder's files, `source` stubbed."""
        return {
            "PATH": f"{self.dir}:/usr/bin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
            "STUB_CALLS": str(self.calls_file),
            "STUB_SOURCED": str(self.sourced_file),
            "BASH_FUNC_source%%": SOURCE_FUNCTION,
            **extra,
        }

    def run_bash(self, args: list[str], env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", *args], cwd=self.cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def calls(self, prog: str | None = None) -> list[dict[str, Any]]:
        if not self.calls_file.exists():
            return []
        rows = [json.loads(line) for line in self.calls_file.read_text().splitlines() if line.strip()]
        return [r for r in rows if prog is None or r["prog"] == prog]

    def sourced(self) -> list[str]:
        return self.sourced_file.read_text().splitlines() if self.sourced_file.exists() else []

    def reset(self) -> None:
        for path in (self.calls_file, self.sourced_file):
            path.unlink(missing_ok=True)


def server_calls(stubs: StubBin) -> list[list[str]]:
    """argv (program name first) of every server or router the stubs saw started."""
    return [[c["prog"], *c["argv"]] for c in stubs.calls() if c["prog"] in ("sglang", "python", "python3")]
