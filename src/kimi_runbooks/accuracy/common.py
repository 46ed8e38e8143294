"""What every accuracy driver shares: the result row, the run-folder file, tool subprocesses.

Each third-party tool runs as a subprocess in its own environment (their pins conflict with the
project's), so the drivers only build argv, run it with a progress bar, and parse the files the
tool writes. Results become `EvalRow`s appended to ``run_dir/accuracy.jsonl`` as they finish.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from ..procs import start_session, stop_group
from ..progress import latest_count, report_progress
from ..rundir import RunFolder, read_jsonl

ACCURACY_FILE = RunFolder.ACCURACY

#: How an eval's number is to be read next to a published one.
Kind = Literal["rate", "count", "seconds", "value"]


class StageMissing(RuntimeError):
    """A checkout, dataset or tool env is not staged; the message says how to stage it."""


class SuiteFailed(RuntimeError):
    """The tool ran and failed; the message carries the tail of its log."""


class EvalRow(BaseModel):
    """One number from one suite: the unit appended to accuracy.jsonl and compared with references.

    ``source`` is "emulated" when the server was the emulator, else "measured"; a row with
    status "skipped" / "error" carries no value and says why in ``detail``.
    """

    model_config = ConfigDict(extra="allow")

    suite: str
    metric: str
    value: float | None = None
    n: int | None = None
    kind: Kind = "rate"
    stderr: float | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    tool: str = ""
    tool_version: str | None = None
    duration_s: float | None = None
    emulated: bool = False
    rehearsal: bool = False  # real SGLang serving a tiny random-weight model on the CPU (launcher sglang-cpu)
    source: Literal["measured", "emulated", "real SGLang, tiny model"] = "measured"
    status: Literal["ok", "skipped", "error"] = "ok"
    detail: str | None = None
    output: str | None = None
    fingerprint: str | None = None
    server: dict[str, Any] | None = None  # the server's /metrics summarised over the suite (speed/server_metrics.py)


def cli_flag(name: str) -> str:
    """A setting's command-line spelling, as the eval tools name their options: max_tokens -> --max-tokens."""
    return "--" + name.replace("_", "-")


def given_options(settings: Any, skip: Sequence[str] = ()) -> dict[str, str]:
    """A tool's command-line options from a settings dataclass whose fields are named as the tool's
    flags: {--flag: value} (cli_flag) for each field not in ``skip`` that is set, in field order (an
    unset one leaves the tool's own default)."""
    values = [(f.name, getattr(settings, f.name)) for f in fields(settings) if f.name not in skip]
    return {cli_flag(name): str(value) for name, value in values if value is not None}


def given_flags(settings: Any, skip: Sequence[str] = ()) -> list[str]:
    """given_options as command-line words: `--flag value ...`."""
    return [word for option in given_options(settings, skip).items() for word in option]


def settings_fingerprint(suite: str, settings: Mapping[str, Any]) -> str:
    """Stable id of (suite, settings): a rerun with the same settings can skip a finished suite."""
    blob = json.dumps({"suite": suite, "settings": settings}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def append_rows(folder: RunFolder, rows: Sequence[EvalRow]) -> None:
    """Append rows (redacted) to the folder's accuracy.jsonl as soon as a suite finishes."""
    for row in rows:
        folder.append_jsonl(folder.accuracy, row.model_dump(mode="json"))


def read_rows(folder: RunFolder) -> list[EvalRow]:
    return [EvalRow.model_validate(r) for r in read_jsonl(folder.accuracy)]


def rows_frame(rows: Sequence[EvalRow]) -> pd.DataFrame:
    """Rows as a DataFrame for display: one line per number, its source and status first."""
    cols = [
        "suite",
        "metric",
        "value",
        "n",
        "stderr",
        "source",
        "status",
        "tool",
        "tool_version",
        "duration_s",
        "detail",
    ]
    return pd.DataFrame([r.model_dump() for r in rows], columns=None).reindex(columns=cols)


def finished_fingerprints(folder: RunFolder) -> set[str]:
    """Fingerprints of suites that already produced ok rows in this run folder."""
    return {r.fingerprint for r in read_rows(folder) if r.status == "ok" and r.fingerprint}


# --------------------------------------------------------------------------- subprocesses


@dataclass(frozen=True)
class Endpoint:
    """The server an eval tool is pointed at: its OpenAI base (ending in /v1), the served model
    name, and the key (handed to the tool in its environment, never on a command line)."""

    base_url: str
    model: str
    api_key: str = "EMPTY"


@dataclass(frozen=True)
class ToolJob:
    """What every driver's run of its tool needs besides the tool's own flags: the server it points
    the tool at, the folder the tool's files go to, the run folder that writes them (redacting the
    key), and how long the tool may run. The stage builds one per suite (SuiteContext.job), so
    these are not passed one by one to each driver."""

    server: Endpoint
    out_dir: Path
    folder: RunFolder | None = None
    timeout: float | None = None

    def writer(self) -> RunFolder:
        """The run folder to write through (a fresh one on ``out_dir`` when the driver is called on
        its own), with ``out_dir`` made."""
        folder = self.folder or RunFolder.create(self.out_dir)
        folder.mkdir(self.out_dir)
        return folder


@dataclass
class ToolRun:
    """How a tool subprocess ended: exit code, wall time, and where its output went."""

    argv: list[str]
    returncode: int
    duration_s: float
    log_path: Path
    stdout_tail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def run_tool(
    argv: Sequence[str],
    folder: RunFolder,
    log_path: Path,
    desc: str,
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> ToolRun:
    """Run a tool, its stdout+stderr going to ``log_path``, with a tqdm bar named ``desc`` while it runs.

    The bar follows the tool's own "n/total [" progress lines when it prints them, else it
    just shows elapsed time. The command line is written (redacted) at the top of the log.
    """
    full_env = {**os.environ, **(env or {})}
    start = time.monotonic()
    with folder.open_log(log_path) as log:
        log.write("$ " + " ".join(folder.redact(list(argv))) + "\n")
        log.flush()
        proc = start_session(
            list(argv), cwd=cwd, env=full_env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        bar = tqdm(desc=desc, total=None, unit="step", leave=True, mininterval=1.0)
        try:
            while proc.poll() is None:
                _advance(bar, log_path, folder)
                if timeout is not None and time.monotonic() - start > timeout:
                    stop_group(proc)
                    raise SuiteFailed(f"{desc}: gave up after {timeout:.0f}s; log: {log_path}")
                time.sleep(0.25)
            _advance(bar, log_path, folder)
        except BaseException:
            stop_group(proc, grace_s=0)
            raise
        finally:
            bar.close()
    duration = time.monotonic() - start
    # open_log redacted the log on close: the tool may have echoed a key (e.g. in an error)
    clean = log_path.read_text(errors="replace")
    return ToolRun(list(argv), proc.returncode, duration, log_path, clean[-3000:])


def _advance(bar: tqdm, log_path: Path, folder: RunFolder | None = None) -> None:
    count = latest_count(log_path)
    if count:
        done, total = count
        if bar.total != total or bar.n != done:
            bar.total = total
            bar.n = done
            bar.refresh()
            report_progress(folder, "accuracy", f"{bar.desc}: {done}/{total}", key=str(bar.desc))


def fail_message(run: ToolRun, what: str, hint: str = "") -> str:
    tail = "\n".join(run.stdout_tail.strip().splitlines()[-15:])
    msg = f"{what} exited with code {run.returncode} after {run.duration_s:.1f}s (log: {run.log_path})"
    if hint:
        msg += f". {hint}"
    return f"{msg}\n--- last lines ---\n{tail}"
