"""Read a server's log and say in one sentence why it did not start (or what went wrong serving).

A start-up failure of SGLang ends in hundreds of lines of traceback from several ranks; the
cause is almost always one of a handful of known ones. Those live as data in
params/diagnosis/*.yaml (signatures.py): regex, meaning, fix, public source. `diagnose(log)`
takes the first error signature found (the tail first, where the cause usually is) and returns
the sentence, the fix, the sources and the last ~40 lines (redacted) as the excerpt; `findings`
lists every signature in a log; `run_diagnosis` is what the report shows for a failed deployment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..rundir import RunFolder
from ..secrets import redact
from .signatures import Signature, load_signatures

EXCERPT_LINES = 40
TAIL_SEARCHED = 200
LOG_BYTES_READ = 4 * 1024 * 1024  # the end of a huge log is enough: the cause is near the end


@dataclass(frozen=True)
class Diagnosis:
    kind: str
    sentence: str
    fix: str
    excerpt: str
    sources: tuple[str, ...] = ()  # "sgl-project/sglang issue 13308"
    notes: tuple[str, ...] = field(default=())  # warning/info signatures also found in the log

    def __str__(self) -> str:
        return f"{self.sentence} Fix: {self.fix}"


@dataclass(frozen=True)
class Finding:
    """One signature found in a log: which, the line it matched, and its filled-in meaning."""

    signature: Signature
    line: str
    sentence: str

    def as_dict(self) -> dict[str, Any]:
        sig = self.signature
        return {
            "id": sig.id,
            "severity": sig.severity,
            "phase": sig.phase,
            "meaning": self.sentence,
            "fix": sig.fix,
            "line": self.line,
            "sources": [{"label": s.label, "url": s.url} for s in sig.sources],
        }


def tail(text: str, lines: int = EXCERPT_LINES) -> str:
    return "\n".join(text.splitlines()[-lines:])


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _fill(sig: Signature, match: re.Match[str], version: str | None, port: int | None) -> str:
    values: dict[str, str] = {}
    for name, value in match.groupdict().items():
        if value:
            values.setdefault(name.rstrip("0123456789"), value.strip())
    if "flags" in values:  # argparse names flags and their values: keep the flags
        values["flags"] = ", ".join(f for f in values["flags"].split() if f.startswith("-")) or values["flags"]
    if port and "port" not in values:
        values["port"] = str(port)
    wanted = re.findall(r"\{(\w+)\}", sig.detail)
    detail = sig.detail.format_map(_Blank(values)) if sig.detail and all(values.get(w) for w in wanted) else ""
    return sig.meaning.format_map(_Blank({**values, "detail": detail, "version": f" {version}" if version else ""}))


def _line_of(match: re.Match[str]) -> str:
    text = match.string
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end != -1 else len(text)].strip()[:500]


def findings(
    log: str, signatures: Iterable[Signature] | None = None, version: str | None = None, port: int | None = None
) -> list[Finding]:
    """Every catalogue signature found in the log, in catalogue order (its last occurrence)."""
    found = []
    for sig in signatures if signatures is not None else load_signatures():
        matches = list(sig.pattern.finditer(log))
        if matches:
            found.append(Finding(sig, _line_of(matches[-1]), _fill(sig, matches[-1], version, port)))
    return found


def diagnose(
    log: str,
    *,
    returncode: int | None = None,
    sglang_version: str | None = None,
    port: int | None = None,
    secret_env: str | None = None,
    signatures: Iterable[Signature] | None = None,
) -> Diagnosis:
    """The first error signature found in `log` (its tail searched first), else a generic sentence."""
    catalogue = list(signatures) if signatures is not None else list(load_signatures())
    names = [secret_env]
    excerpt = redact(tail(log), names)
    exit_line = f"\n(process exit code: {returncode})" if returncode is not None else ""
    errors = [s for s in catalogue if s.severity == "error"]
    notes = tuple(
        redact(f.sentence, names)
        for f in findings(log, catalogue, sglang_version, port)
        if f.signature.severity != "error"
    )
    for text in (tail(log, TAIL_SEARCHED) + exit_line, log + exit_line):
        for sig in errors:
            match = sig.pattern.search(text)
            if match:
                sentence = redact(_fill(sig, match, sglang_version, port), names)
                return Diagnosis(sig.id, sentence, sig.fix, excerpt, tuple(s.label for s in sig.sources), notes)
    last = next((line.strip() for line in reversed(log.splitlines()) if line.strip()), "")
    code = f" with exit code {returncode}" if returncode is not None else ""
    sentence = f"The server exited{code}; no known cause was found in its log" + (
        f" (last line: {redact(last[:200], names)})." if last else " (the log is empty)."
    )
    return Diagnosis(
        "unknown", sentence, "read the log excerpt below and server.log in the run folder.", excerpt, (), notes
    )


def _read_logs(folder: RunFolder) -> str:
    """server.log, and the per-node logs of a multi-node run (server-<role>-<rank>.log)."""
    nodes = sorted(folder.path.glob("server-*-*.log")) if folder.path.is_dir() else []
    parts = []
    paths = [folder.server_log, *nodes]
    for path in paths:
        if path.is_file():
            with path.open("rb") as fh:
                size = path.stat().st_size
                fh.seek(max(0, size - LOG_BYTES_READ))
                parts.append(fh.read().decode("utf-8", errors="replace"))
    return "\n".join(parts)


def run_diagnosis(run_dir: str | Path, deploy_status: str | None) -> dict[str, Any] | None:
    """What the report shows at the top for a failed deployment (None when deploy did not fail).

    The cause from the run's server log(s) with its fix and sources, the other signatures found,
    and the redacted log tail; all labelled with where they came from.
    """
    if deploy_status != "failed":
        return None
    folder = RunFolder(run_dir)
    log = _read_logs(folder)
    diag = diagnose(log, secret_env=None)
    by_id = {s.id: s for s in load_signatures()}
    sig = by_id.get(diag.kind)
    return {
        "kind": diag.kind,
        "sentence": folder.redact(diag.sentence),
        "fix": diag.fix,
        "sources": [{"label": s.label, "url": s.url} for s in sig.sources] if sig else [],
        "also_found": [folder.redact(f.as_dict()) for f in findings(log) if f.signature.id != diag.kind],
        "excerpt": folder.redact(diag.excerpt),
        "logs": [p.name for p in [folder.server_log, *sorted(folder.path.glob("server-*-*.log"))] if p.is_file()],
    }
