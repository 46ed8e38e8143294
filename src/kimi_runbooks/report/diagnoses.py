"""What a failing run comes down to, said first: the server went away, it is not SGLang, it is not Kimi.

A run's failures are counted per unit of work (a check, a scenario, a suite), but most of them share
a cause a reviewer must read before any of them: a server killed mid-stage fails every later check
with "could not reach the server"; a server without SGLang's native API skips the native-API
scenarios; a server without the kimi_k2 parsers fails every reasoning and tool-call check. The
verdict's headline and the next steps lead with these (in that order), and the units they explain
are not listed again one by one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..rundir import RunFolder
from . import causes
from .collect import RunData

SERVER_GONE = re.compile(
    r"could not reach the server|lost the connection to the server|connection refused|cannot connect to host"
    r"|connect call failed|server disconnected|remote end closed connection|nothing is listening"
    r"|connection reset by peer|\bconnection error\b",
    re.IGNORECASE,
)
"""How a client says the server is not there (the invoke checks', bench_serving's, the eval tools')."""
WHERE = re.compile(r"^(?:could not reach|lost the connection to) the server at \S+: ")
NO_NATIVE_API = "no SGLang native API"
"""speed.native's probe reason, recorded on every native-API scenario it skipped."""
SERVER_CAUSES = ("server gone", "not SGLang")
"""Causes in the server itself: they lead a failing verdict, before a stage that broke by itself."""
FIX_IN_TEXT = re.compile(r"\.?\s*Fix:\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # server gone | not SGLang | not Kimi
    text: str
    fix: str
    covers: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    """(stage, unit) pairs this cause explains: not listed again in the next steps."""
    short: str = ""
    """The headline's words (the text without its detail)."""


def server_logs(data: RunData) -> list[str]:
    """The server log files this run holds (none for an external server: the run did not start it)."""
    if data.external or not data.run_dir.is_dir():
        return []
    folder = RunFolder(data.run_dir)
    found = [folder.server_log, *sorted(data.run_dir.glob("server-*.log"))]
    return [p.name for p in found if p.is_file() and p.stat().st_size > 0]


def read_log_step(data: RunData, what: str) -> str:
    """'read server.log in the run folder for <what>', or where to look when the run has no log."""
    logs = server_logs(data)
    if logs:
        return f"read {', '.join(logs)} in the run folder for {what}"
    if data.external:
        return f"read the server's own log for {what}"
    return f"see each reason in the sections below for {what}"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" + ("" if n == 1 else "s")


def _gone(data: RunData) -> Diagnosis | None:
    invoke = [r for r in data.invoke or [] if r.status == "fail" and SERVER_GONE.search(str(r.reason))]
    speed: list[str] = []
    if data.speed is not None and {"status", "error"} <= set(data.speed.columns):
        rows = data.speed[data.speed["status"] == "failed"]
        speed = [str(s) for s, e in zip(rows["scenario"], rows["error"], strict=True) if SERVER_GONE.search(str(e))]
    accuracy = sorted(
        {
            str(r.get("suite"))
            for r in data.accuracy or []
            if r.get("status") == "error" and SERVER_GONE.search(str(r.get("detail") or ""))
        }
    )
    if not (invoke or speed or accuracy):
        return None
    parts = []
    if invoke:
        parts.append(_plural(len(invoke), "invoke check") + f" (from {invoke[0].name} on)")
    if speed:
        parts.append(_plural(len(speed), "speed scenario") + f" (from {speed[0]} on)")
    if accuracy:
        parts.append(_plural(len(accuracy), "accuracy suite") + f" ({', '.join(accuracy[:4])})")
    example = str(invoke[0].reason if invoke else "").split(" [likely cause")[0]
    example = WHERE.sub("", example)[:160]  # "could not reach the server at <url>: " says the line's own words
    text = "the server stopped answering: " + ", ".join(parts) + " could not reach it"
    text += f" ({example})" if example else ""
    base_url = (data.handle or {}).get("base_url") or "its URL"
    if server_logs(data):
        fix = read_log_step(data, "why it stopped (a crash, out of memory, the process killed)") + "; then rerun"
    elif data.external:
        fix = f"check the server at {base_url} is up (its own log says why it stopped), then rerun"
    else:
        fix = "start the server again and rerun (nothing here records why it stopped)"
    covers = {("invoke", r.name) for r in invoke} | {("speed", s) for s in speed} | {("accuracy", s) for s in accuracy}
    short = "the server stopped answering: " + ", ".join(parts) + " could not reach it"
    return Diagnosis("server gone", text, fix, frozenset(covers), short)


def _not_sglang(data: RunData) -> Diagnosis | None:
    if data.speed is None or "error" not in data.speed.columns:
        return None
    hits = [(str(s), str(e)) for s, e in zip(data.speed["scenario"], data.speed["error"], strict=True)]
    hits = [(s, e) for s, e in hits if NO_NATIVE_API in e]
    if not hits:
        return None
    said, fix = _split(hits[0][1])
    names = [s for s, _ in hits]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    text = (
        f"the server is not SGLang: {said.removeprefix('this server has ')}; {_plural(len(names), 'speed scenario')} "
    )
    text += f"skipped ({shown})"
    probe = re.search(r"\(POST /generate answered \d+\)", said)
    short = "the server is not SGLang" + (f" {probe.group(0)}" if probe else "")
    covers = frozenset(("speed", s) for s in names)
    return Diagnosis("not SGLang", text, fix or "serve with SGLang", covers, short)


def _split(text: str) -> tuple[str, str]:
    """'<what>. Fix: <fix>' -> (what, fix); fix is empty when the text names none."""
    parts = FIX_IN_TEXT.split(text, maxsplit=1)
    return parts[0].rstrip(" ."), (parts[1].strip() if len(parts) > 1 else "")


def _not_kimi(data: RunData) -> Diagnosis | None:
    if not causes.diagnosis(data.invoke):
        return None
    names = {
        ("invoke", r.name)
        for r in data.invoke or []
        if r.name in (*causes.REASONING, *causes.TOOLS) and getattr(r, "suite", "feature") == "feature"
    }
    short = "no reasoning and no tool calls at all: the server is not Kimi behind the kimi_k2 parsers"
    return Diagnosis("not Kimi", causes.NOT_KIMI, causes.NOT_KIMI_FIX, frozenset(names), short)


def diagnoses(data: RunData) -> list[Diagnosis]:
    """The run-level causes found, most basic first (no server explains everything after it)."""
    found = [d(data) for d in (_gone, _not_sglang, _not_kimi)]
    return [d for d in found if d is not None]


def covered(found: list[Diagnosis]) -> set[tuple[str, str]]:
    return {unit for d in found for unit in d.covers}
