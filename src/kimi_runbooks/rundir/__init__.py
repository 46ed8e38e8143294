"""The run folder: every path in it, and the only way package code writes into it.

A run folder (outputs/<run id>/) is the contract between the stages: each stage reads what the
earlier ones left and adds its own files. `RunFolder` names every file once (AIPerf keeps its
output names in one class for the same reason) and performs every write, redacting on the way:
the values of the run's secret env variables (recorded by NAME in the folder, so a later stage
that opens the folder redacts them too) and anything that looks like a credential. A new write
site therefore cannot leak a key; tests/test_layout.py fails when package code writes a file any
other way. Every whole file is written atomically (rundir/atomic.py): a run killed mid-write
leaves the old content or the new, never a cut-short file.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..paths import OUTPUTS_DIR
from ..secrets import redact, redact_html, redact_notebook, require_redactable
from .atomic import copy_file, replace_text
from .logs import LogPipes

OUTPUTS_ENV = "KIMI_RUNBOOKS_OUTPUTS"
SECRET_NAMES_FILE = ".secret-env-names"
HTML_SUFFIXES = (".html", ".htm")


class RunFolderError(ValueError):
    """The run folder cannot be used (a file, not writable, outside the folder)."""


class RunFolderBusy(RunFolderError):
    """Another run holds this folder's lock."""


def outputs_base() -> Path:
    """Where new run folders go: $KIMI_RUNBOOKS_OUTPUTS, else the checkout's outputs/ (not the
    working directory's: a runbook stepped through in JupyterLab runs in runbooks/)."""
    return Path(os.environ.get(OUTPUTS_ENV) or OUTPUTS_DIR)


def new_run_id(label: str = "run") -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "run"
    return f"{stamp}-{safe}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file; a torn last line (killed mid-write) is skipped, not fatal."""
    p = Path(path)
    if not p.exists():
        return []
    rows = []
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def row_number(value: Any) -> float:
    """A row's value as a float (a number, or a string of one, as older rows and reference tables
    carry them); NaN where it is missing or not a number, so a table's arithmetic skips it."""
    if isinstance(value, str):
        value = value.strip()
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


class UnreadableJSON(ValueError):
    """A JSON file that cannot be parsed (cut short by a kill before writes were atomic, or edited by
    hand); the message names the file, what is wrong and the fix."""

    def __init__(self, path: Path, exc: json.JSONDecodeError) -> None:
        super().__init__(
            f"{path} is not readable JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; cut short?). "
            "Fix: delete it once nothing it names is still running"
        )
        self.path = path


def read_json(path: str | Path) -> Any:
    """A JSON file's content, or None when it does not exist; UnreadableJSON when it cannot be parsed."""
    p = Path(path)
    if not p.exists():
        return None
    try:
        return json.loads(p.read_text(encoding="utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise UnreadableJSON(p, exc) from None


def write_redacted(path: str | Path, text: str, secret_envs: Iterable[str | None] = ()) -> Path:
    """Write `text` with every secret replaced; for files outside a run folder (comparison pages)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    clean = redact_html if out.suffix.lower() in HTML_SUFFIXES else redact
    return replace_text(out, clean(text, list(secret_envs)))


class _Named:
    """A file or folder of the run folder, read as its path (`folder.manifest`, `folder.logs`)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, folder: RunFolder, owner: type[RunFolder] | None = None) -> Path:
        return folder.path / self.name


class RunFolder(LogPipes):
    """One run's folder. File names are class constants; writes are methods that redact."""

    RUNBOOK = "runbook.json"
    PLAN = "plan.json"
    PLAN_ERRORS = "plan_errors.json"
    STAGES = "stages.jsonl"
    HANDLE = "handle.json"
    PROCESS = "process.json"
    MANIFEST = "manifest.json"
    PREFLIGHT = "preflight.json"
    SERVER_LOG = "server.log"
    STEPS = "STEPS.txt"
    SBATCH = "server.sbatch"
    INVOKE = "invoke.json"
    BENCH = "bench.jsonl"
    ACCURACY = "accuracy.jsonl"
    REPORT = "report.html"
    PROGRESS = "progress.jsonl"
    FINGERPRINT = "fingerprint.json"
    LOCK = ".lock"
    LOCK_HOLDER = ".lock.json"
    # under logs/: the helpers' own logs
    WATCHDOG_LOG = "watchdog.log"
    BENCH_WORKER_LOG = "bench-worker.log"
    TOKEN_PROBE_LOG = "token-probe.log"
    ROUTER_LOG = "router.log"
    MEMBER_LOG = "{}-{}.log"  # one server of a fleet (a PD pool's server or a replica) by kind and name
    BENCH_WORKER = "bench-worker.json"  # the shared bench worker's socket and pid
    # in an accuracy suite's folder: what the tools write there
    TOOL_LOGS = "logs"  # inspect's .eval logs
    TOOL_RESULTS, TOOL_SUMMARY = "results.jsonl", "summary.json"
    K2VV_RESULTS, K2VV_SUMMARY = "k2vv-results.jsonl", "k2vv-summary.json"
    SAMPLES, EXPECTED = "samples.jsonl", "expected_results.jsonl"
    CI_TOOLCALL_SAMPLES = "toolcall-ci"  # the tool-call samples generated when no dataset is given
    FIRST_SAMPLES = "samples.first{limit}.jsonl"  # the first `limit` of a tool's samples

    # the folder's files as paths: folder.manifest is folder.path / MANIFEST
    handle = _Named(HANDLE)
    manifest = _Named(MANIFEST)
    plan = _Named(PLAN)
    plan_errors = _Named(PLAN_ERRORS)
    runbook = _Named(RUNBOOK)
    stages = _Named(STAGES)
    process = _Named(PROCESS)
    preflight = _Named(PREFLIGHT)
    server_log = _Named(SERVER_LOG)
    invoke = _Named(INVOKE)
    bench = _Named(BENCH)
    accuracy = _Named(ACCURACY)
    report = _Named(REPORT)
    sbatch = _Named(SBATCH)
    steps = _Named(STEPS)
    router_script = _Named("router.sh")
    notebooks = _Named("notebooks")
    logs = _Named("logs")
    bench_raw = _Named("bench_raw")
    accuracy_work = _Named("accuracy")
    tokenizer = _Named("tokenizer")
    tiny_model = _Named("tiny-model")  # the CPU rehearsal's generated checkpoint (launcher sglang-cpu)
    REHEARSAL = "rehearsal.json"  # what the CPU rehearsal passed to SGLang, and what could not apply
    rehearsal = _Named(REHEARSAL)

    def __init__(self, path: str | Path, secret_envs: Iterable[str | None] = ()) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise RunFolderError(
                f"run_dir {self.path} is a file, not a folder. Fix: pass a folder path (it is created when missing)."
            )
        self._names = {n for n in secret_envs if n}

    # ------------------------------------------------------------------ creation

    @classmethod
    def create(
        cls,
        path: str | Path | None = None,
        *,
        label: str = "run",
        base: str | Path | None = None,
        secret_envs: Iterable[str | None] = (),
    ) -> RunFolder:
        """The given folder, or a new one under `base` (default outputs/); created and checked writable."""
        folder = cls(Path(path) if path else Path(base or outputs_base()) / new_run_id(label), secret_envs)
        try:
            folder.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunFolderError(
                f"cannot create run folder {folder.path}: {exc.strerror or exc}. Fix: choose a writable run_dir."
            ) from None
        if not os.access(folder.path, os.W_OK):
            raise RunFolderError(f"run folder {folder.path} is not writable. Fix: choose a writable run_dir.")
        for name in folder._names:
            require_redactable(name)
        folder._save_names()
        return folder

    @classmethod
    def of(
        cls,
        folder: str | Path | RunFolder | None,
        *,
        create: bool = False,
        label: str = "run",
        secret_envs: Iterable[str | None] = (),
    ) -> RunFolder:
        """The one conversion of "a run folder or its path" at a stage's boundary: a RunFolder as it
        is (with `secret_envs` added), else the folder at that path (`create`, or no path: made and
        checked writable by `create`, a new one under outputs/ named after `label` when no path)."""
        if isinstance(folder, RunFolder):
            for name in secret_envs:
                folder.add_secret_env(name)
            return folder
        if create or folder is None:
            return cls.create(folder, label=label, secret_envs=secret_envs)
        return cls(folder, secret_envs)

    @property
    def run_id(self) -> str:
        return self.path.name

    # ------------------------------------------------------------------ paths

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def file(self, name: str) -> Path:
        return self.path / name

    def bench_output(self, scenario_id: str) -> Path:
        return self.bench_raw / f"{scenario_id}.jsonl"

    def bench_log(self, scenario_id: str) -> Path:
        return self.logs / f"bench-{scenario_id}.log"

    def metrics_series(self, scenario_id: str) -> Path:
        """The server's /metrics samples taken while one speed scenario ran."""
        return self.path / "metrics" / f"{scenario_id}.jsonl"

    def telemetry_series(self, scenario_id: str) -> Path:
        """Device telemetry (power, utilisation, memory, temperature) while one speed scenario ran."""
        return self.path / "telemetry" / f"{scenario_id}.jsonl"

    def member_log(self, name: str, server: str = "emulator") -> Path:
        """The log of one server a fleet starts (`prefill-0`, `replica-1`) behind the router: an emulator's
        logs/emulator-replica-1.log, a CPU rehearsal's real SGLang logs/sglang-replica-1.log."""
        return self.logs / self.MEMBER_LOG.format(server, name)

    def node_script(self, role: str, rank: int) -> Path:
        return self.path / f"node-{role}-{rank}.sh"

    def node_log(self, role: str, rank: int) -> Path:
        return self.path / self.node_log_name(role, rank)

    @staticmethod
    def node_log_name(role: str, rank: int) -> str:
        return f"server-{role}-{rank}.log"

    @staticmethod
    def tool_log(work_dir: Path, tool: str) -> Path:
        return work_dir / f"{tool}.log"

    def notebook(self, name: str) -> Path:
        return self.notebooks / name

    # ------------------------------------------------------------------ secrets

    @property
    def secret_envs(self) -> list[str]:
        """Names of the env variables whose values never reach this folder (values are not stored)."""
        names = set(self._names)
        stored = self.path / SECRET_NAMES_FILE
        if stored.exists():
            names |= {line.strip() for line in stored.read_text().splitlines() if line.strip()}
        return sorted(names)

    def add_secret_env(self, name: str | None) -> None:
        """Record one more secret env NAME (later stages opening this folder redact it too)."""
        if name and name not in self._names:
            require_redactable(name)
            self._names.add(name)
            self._save_names()

    def _save_names(self) -> None:
        if not self._names or not self.path.is_dir():
            return
        stored = self.path / SECRET_NAMES_FILE
        known = set(stored.read_text().split()) if stored.exists() else set()
        if not self._names <= known:
            replace_text(stored, "".join(f"{n}\n" for n in sorted(known | self._names)))

    def redact(self, value: Any) -> Any:
        return redact(value, self.secret_envs)

    # ------------------------------------------------------------------ writes

    def _inside(self, path: str | Path) -> Path:
        p = Path(path)
        if not p.is_absolute() and not str(p).startswith(str(self.path)):
            p = self.path / p
        try:
            p.resolve().relative_to(self.path.resolve())
        except ValueError:
            raise RunFolderError(f"{p} is outside the run folder {self.path}") from None
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def save_text(self, path: str | Path, text: str, *, executable: bool = False) -> Path:
        """Text with secrets replaced; an HTML file in its text nodes only (see secrets.redact_html)."""
        if Path(path).suffix.lower() in HTML_SUFFIXES:
            return self._write(path, redact_html(text, self.secret_envs), executable)
        return self._write(path, self.redact(text), executable)

    def save_notebook(self, path: str | Path, nb: dict[str, Any]) -> Path:
        """A notebook (as JSON, e.g. json.loads(nbformat.writes(nb))) with its HTML outputs redacted
        as HTML, the rest as text; written as nbformat writes it."""
        clean = redact_notebook(nb, self.secret_envs)
        return self._write(path, json.dumps(clean, indent=1, sort_keys=True, ensure_ascii=False) + "\n")

    def save_json(self, path: str | Path, doc: Any) -> Path:
        """The structure is redacted value by value, then serialised (redacting the JSON text itself
        could cut through quotes and break the file)."""
        return self._write(path, json.dumps(self.redact(doc), indent=2, default=str, ensure_ascii=False))

    def _write(self, path: str | Path, text: str, executable: bool = False) -> Path:
        return replace_text(self._inside(path), text, executable=executable)

    def append_jsonl(self, path: str | Path, row: dict[str, Any]) -> None:
        """Append one result as it finishes (fsync'd), so a crash never loses finished work."""
        p = self._inside(path)
        with p.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(self.redact(row), default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def update_json(self, path: str | Path, **values: Any) -> dict[str, Any]:
        """Merge `values` into a JSON object file (created when missing)."""
        p = self._inside(path)
        data = read_json(p) or {}
        data.update(values)
        self.save_json(p, data)
        return data

    def save_copy(self, src: str | Path, dest: str | Path) -> Path:
        """Copy a file into the folder, redacting text files on the way."""
        p = self._inside(dest)
        try:
            text = Path(src).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return copy_file(src, p)
        return self.save_text(p, text)

    def redact_file(self, path: str | Path) -> None:
        """Re-write a file a tool wrote by itself (logs, result files) with secrets replaced."""
        p = self._inside(path)
        if not p.exists():
            return
        text = p.read_text(encoding="utf-8", errors="replace")
        clean = self.redact(text)
        if clean != text:
            replace_text(p, clean)

    def copy_tree(self, source: str | Path, dest: str | Path) -> Path:
        """Copy a directory (a tokenizer, a dataset) into the folder, merging with what is there."""
        target = self._inside(dest)
        shutil.copytree(source, target, dirs_exist_ok=True, copy_function=copy_file)
        return target

    @contextmanager
    def lock(self, holder: dict[str, Any]) -> Iterator[int]:
        """Hold this folder for one run (flock on .lock; the kernel drops it when every holder of
        the descriptor is gone, however they died). Yields the descriptor, to hand to a helper
        that must keep the folder locked after this process (the watchdog). RunFolderBusy when
        another run holds it."""
        import fcntl

        fd = os.open(self._inside(self.LOCK), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            held = read_json(self.path / self.LOCK_HOLDER) or {}
            raise RunFolderBusy(
                f"run folder {self.path} is in use by another run (pid {held.get('pid', '?')}, started "
                f"{held.get('started_at', '?')}, watchdog pid {held.get('watchdog_pid', '-')}): two runs in "
                "one folder would stop each other's servers and mix their results. Fix: wait for that run "
                f"to end, stop it (kimi-runbooks teardown {self.path}), or pass another run_dir."
            ) from None
        try:
            self.save_json(self.LOCK_HOLDER, holder)
            yield fd
        finally:
            os.close(fd)

    def set_aside(self, names: Iterable[str], label: str) -> Path | None:
        """Move these entries of the folder into superseded/<label>/ (kept, never mixed in)."""
        present = [n for n in names if (self.path / n).exists()]
        if not present:
            return None
        dest = self.mkdir(self.path / "superseded" / label)
        for name in present:
            os.replace(self._inside(name), dest / name)
        return dest

    def mkdir(self, path: str | Path) -> Path:
        """A sub-folder of the run folder, created."""
        p = self._inside(path)
        p.mkdir(parents=True, exist_ok=True)
        return p

    def read_json(self, path: str | Path) -> Any:
        return read_json(self.path / path if not Path(path).is_absolute() else path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)
