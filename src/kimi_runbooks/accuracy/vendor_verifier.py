"""Drivers for MoonshotAI's two verifier repos, which are git checkouts, not packages.

* K2-Vendor-Verifier (tool calls): ``python tool_calls_eval.py samples.jsonl --model ... --output
  results.jsonl`` writes a results JSONL and summary.json, read with the same parsers as the
  built-in eval (kimi_runbooks.accuracy.toolcall_eval).
* Kimi-Vendor-Verifier (OCRBench, MMMU Pro): ``python3 eval.py ocrbench ...`` is inspect-ai based
  and writes an .eval log, read with inspect's own reader (kimi_runbooks.accuracy.inspect_eval).

The published commands come from params/references; the driver swaps in this run's endpoint,
model and output paths. A missing checkout raises StageMissing saying how to stage it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..rundir import RunFolder
from ..tools.scripts import script
from .common import StageMissing, SuiteFailed, ToolJob, ToolRun, cli_flag, fail_message, given_options, run_tool
from .references import reference_entry

K2VV_SAMPLES = "tool-calls/samples.jsonl"
"""K2-Vendor-Verifier's own samples file, in its checkout (not the run folder's)."""

K2VV_URL = "https://github.com/MoonshotAI/K2-Vendor-Verifier.git"
KVV_URL = "https://github.com/MoonshotAI/Kimi-Vendor-Verifier.git"
K2VV_MARKER = "tool_calls_eval.py"
KVV_MARKER = "eval.py"


@dataclass(frozen=True)
class Verifier:
    """A vendor verifier repository the accuracy stage runs from a checkout."""

    name: str
    url: str
    marker: str
    """A file a usable checkout holds."""
    parameter: str
    """The accuracy setting that names the checkout's path."""


K2VV = Verifier("K2-Vendor-Verifier", K2VV_URL, K2VV_MARKER, "k2vv_path")
KVV = Verifier("Kimi-Vendor-Verifier", KVV_URL, KVV_MARKER, "kvv_path")


def url_reachable(url: str, timeout: float = 15.0) -> bool:
    """Whether `git ls-remote` reaches the repository (False offline or without git)."""
    if shutil.which("git") is None:
        return False
    try:
        proc = subprocess.run(
            ["git", "ls-remote", "--heads", url],
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            check=False,
        )
    except (subprocess.TimeoutExpired, OSError):
        return False
    return proc.returncode == 0


def ensure_checkout(path: str | Path | None, verifier: Verifier, *, clone: bool = True) -> Path:
    """A usable checkout of `verifier` at ``path``: present (has its marker), or cloned when its url is reachable."""
    name, url, marker = verifier.name, verifier.url, verifier.marker
    if path is None:
        raise StageMissing(
            f"{name}: no checkout path given. Fix: `git clone {url} /some/dir` (on a connected machine, then copy "
            f"it over) and pass its path ({verifier.parameter}=...)."
        )
    p = Path(path).expanduser()
    if (p / marker).is_file():
        return p
    if clone and not p.exists() and url_reachable(url):
        proc = subprocess.run(
            ["git", "clone", "--depth", "1", url, str(p)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if proc.returncode == 0 and (p / marker).is_file():
            return p
    raise StageMissing(
        f"{name}: no checkout at {p} (expected {marker} there) and {url} could not be cloned from here. Fix: "
        f"`git clone {url} {p}` on a machine with GitHub access and copy the folder to this path; "
        "the other suites still run."
    )


def checkout_python(checkout: Path, fallback: str | Path | None) -> str:
    """The checkout's own venv (``uv sync`` makes .venv), else the given fallback interpreter."""
    own = checkout / ".venv" / "bin" / "python"
    if own.exists():
        return str(own)
    if fallback is None:
        raise StageMissing(
            f"no Python environment for {checkout}. Fix: `cd {checkout} && uv sync` (creates .venv), "
            "or pass python=... for an interpreter that has its requirements."
        )
    return str(fallback)


def published_argv(
    suite: str, replace: dict[str, str | None], positional: list[str] | None = None, model: str | None = None
) -> list[str]:
    """The published command of ``suite`` (the served ``model``'s own parameter set when params/references
    has one, accuracy.references.for_model) split into words, its flags and positionals replaced.

    ``replace`` maps a flag to its new value (None drops the flag and its value); leading
    ``VAR=value`` words are dropped (the driver sets the environment itself); the interpreter
    word is dropped (the caller prefixes its own).
    """
    words = shlex.split(reference_entry(suite, model=model)["command"])
    while words and "=" in words[0] and not words[0].startswith("-"):
        words.pop(0)
    if words and Path(words[0]).name.startswith("python"):
        words.pop(0)
    out: list[str] = []
    pos_i = 0
    i = 0
    seen = set()
    while i < len(words):
        w = words[i]
        takes_value = w.startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--")
        if w in replace:
            seen.add(w)
            if replace[w] is not None:
                out += [w, str(replace[w])]
            i += 2 if takes_value else 1
            continue
        if not w.startswith("-") and positional is not None and (not out or not out[-1].startswith("--")):
            # a positional after the script name: replace in order (the script itself is kept)
            if w.endswith(".py"):
                out.append(w)
            elif pos_i < len(positional):
                out.append(positional[pos_i])
                pos_i += 1
            else:
                out.append(w)
            i += 1
            continue
        out.append(w)
        i += 1
    for flag, value in replace.items():
        if flag not in seen and value is not None:
            out += [flag, str(value)]
    return out


def first_lines(src: Path, dest: Path, n: int, folder: RunFolder | None = None) -> Path:
    """The first `n` non-empty lines of `src` written to `dest` (for tools without a limit flag)."""
    if n < 1:
        raise ValueError(f"limit must be at least 1 (got {n}). Fix: pass a positive limit, or none for all samples.")
    folder = folder or RunFolder(dest.parent)
    kept: list[str] = []
    with src.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                kept.append(line if line.endswith("\n") else line + "\n")
                if len(kept) == n:
                    break
    return folder.save_text(dest, "".join(kept))


@dataclass(frozen=True)
class K2vvConfig:
    """What this run changes in K2-Vendor-Verifier's published command, as the other drivers' configs
    do for theirs: the samples file (its positional) and flags named as the fields (given_options);
    None keeps the published value."""

    samples: Path
    concurrency: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None


def run_k2vv(cfg: K2vvConfig, job: ToolJob, *, checkout: Path, python: str) -> tuple[ToolRun, Path, Path]:
    """Run K2-Vendor-Verifier's published command; returns (run, results.jsonl, summary.json)."""
    samples = cfg.samples
    if not samples.is_file():
        raise StageMissing(
            f"K2-Vendor-Verifier samples {samples} not found. Fix: extract tool-calls.tar.gz "
            f"(linked from its README) into {checkout}/tool-calls/, or pass toolcall_samples=..."
        )
    server, out_dir = job.server, job.out_dir
    folder = job.writer()
    results, summary = out_dir / RunFolder.K2VV_RESULTS, out_dir / RunFolder.K2VV_SUMMARY
    replace: dict[str, str | None] = {
        "--model": server.model,
        "--base-url": server.base_url,
        "--api-key": None,
        "--output": str(results.resolve()),
        "--summary": str(summary.resolve()),
        **given_options(cfg, skip=("samples",)),
    }
    argv = [python, *published_argv("k2vv-toolcall", replace, positional=[str(samples.resolve())])]
    env = {"OPENAI_API_KEY": server.api_key}
    run = run_tool(
        argv,
        folder,
        RunFolder.tool_log(out_dir, "k2vv"),
        "K2-Vendor-Verifier",
        cwd=checkout,
        env=env,
        timeout=job.timeout,
    )
    if run.returncode != 0 or not results.exists():
        raise SuiteFailed(fail_message(run, "K2-Vendor-Verifier tool_calls_eval.py"))
    return run, results, summary


def run_kvv(
    suite: str,
    job: ToolJob,
    *,
    checkout: Path,
    python: str,
    overrides: dict[str, Any] | None = None,
    limit: int | None = None,
) -> tuple[ToolRun, Path]:
    """Run Kimi-Vendor-Verifier's published command for ocrbench / mmmu-pro; returns (run, .eval log).

    limit: only the first N samples (passed to inspect's eval() through tools/scripts/kvv_limit.py)."""
    server, out_dir = job.server, job.out_dir
    folder = job.writer()
    log_dir = out_dir / RunFolder.TOOL_LOGS
    replace: dict[str, str | None] = {"--model": f"openai/{server.model}"}
    for key, value in (overrides or {}).items():
        replace[cli_flag(key)] = None if value is None else str(value)
    argv = [python, *published_argv(suite, replace, model=server.model)]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1 (got {limit}). Fix: pass a positive limit, or none for all.")
        argv = [python, str(script("kvv_limit.py")), str(limit), *argv[1:]]
    env = {
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": server.api_key,
        "INSPECT_LOG_DIR": str(log_dir.resolve()),
    }
    log = RunFolder.tool_log(out_dir, f"kvv-{suite}")
    run = run_tool(argv, folder, log, f"Kimi-Vendor-Verifier {suite}", cwd=checkout, env=env, timeout=job.timeout)
    logs = sorted(log_dir.glob("*.eval"), key=lambda p: p.stat().st_mtime)
    if run.returncode != 0 or not logs:
        raise SuiteFailed(fail_message(run, f"Kimi-Vendor-Verifier eval.py ({suite})"))
    return run, logs[-1]
