"""Token accounting you can trust: which tokenizer the speed stage uses, and whether the server
counts the scenario's tokens as the benchmark does.

bench_serving sizes prompts and outputs in the tokens of the tokenizer it is given; with any other
tokenizer than the served model's (the emulator's offline one against a real model, say), "128 in / 32
out" becomes ~500 in / ~100 out on the server and the throughput means nothing. So the stage
uses the served model's tokenizer (a `tokenizer` parameter, the handle's, or the deployed plan's
`model_path`; the emulator's offline tokenizer only against the emulator, whose counts it equals), and before
the scenarios run, one request per scenario (tools/scripts/token_probe.py, in the bench env, with
bench_serving's own dataset code) compares the server's usage with the tokens actually sent
(after the chat template for the chat backend) and with the requested output length. Beyond
TOLERANCE the scenario is "not comparable": run and kept with the measured counts, never
compared with references.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..kimi.tokenizer_files import make_offline_tokenizer
from ..rundir import RunFolder
from ..target.served_tokenizer import PASS_IT, model_path_of, served_tokenizer
from ..tools.scripts import script
from .start_phases import mark
from .worker import BenchWorker, WorkerUnavailable

log = logging.getLogger(__name__)

TOLERANCE = 0.02
"""Largest relative difference between the server's count and the benchmark's that still compares."""

PROBE_TIMEOUT_S = 600.0
"""The probe imports bench_serving (~15 s on 2 idle cores) and sends one request per scenario."""


class TokenizerMissing(ValueError):
    """A real server and no tokenizer of its model: the message names the fix."""


@dataclass
class TokenCheck:
    """The server's counts for one scenario's first request, against what the benchmark sent."""

    verified: bool | None  # None: not checked (reason says why)
    reason: str
    nominal_input: int | None = None
    sent_input: int | None = None
    server_input: int | None = None
    requested_output: int | None = None
    server_output: int | None = None
    tokenizer: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def choose_tokenizer(
    tokenizer: str | Path | None,
    target: Any,
    *,
    emulated: bool,
    offline: bool,
    model_path: str | None = None,
) -> tuple[str | Path | None, str]:
    """(tokenizer for --tokenizer, where it came from). The served model's tokenizer
    (target.served_tokenizer: the given one, the handle's, the deployed plan's model_path);
    against the emulator only, None (the caller builds the emulator's). Offline against a real
    server with none known: TokenizerMissing."""
    known = served_tokenizer(tokenizer, target, model_path=model_path)
    if known is not None:
        return (tokenizer if tokenizer else known.path), known.source
    if emulated:
        return None, "the emulator's offline tokenizer (SmolLM2 BPE; emulator only: its counts equal the emulator's)"
    if offline:
        raise TokenizerMissing(
            "the speed stage needs the served model's tokenizer to size prompts in that model's tokens "
            "(with any other, input/output lengths are wrong and the numbers not comparable), and none is "
            f"known. Fix: {PASS_IT}, or offline=False to let bench_serving fetch the tokenizer of the served "
            "model name."
        )
    return None, "bench_serving's default: the served model name on the model hub"


def judge(raw: Mapping[str, Any], tolerance: float = TOLERANCE) -> TokenCheck:
    """One probe result -> verified or not comparable, with the counts in the reason."""
    counts = {
        k: raw.get(k)
        for k in ("nominal_input", "sent_input", "server_input", "requested_output", "server_output", "tokenizer")
    }
    if raw.get("error"):
        return TokenCheck(False, f"token counts could not be checked: {raw['error']}", **counts)
    sent, server_in = raw.get("sent_input"), raw.get("server_input")
    wanted, server_out = raw.get("requested_output"), raw.get("server_output")
    if not isinstance(server_in, int) or not isinstance(server_out, int):
        return TokenCheck(False, "the server reported no usage (prompt_tokens / completion_tokens)", **counts)
    problems = []
    if isinstance(sent, int) and sent > 0 and abs(server_in - sent) > tolerance * sent:
        problems.append(
            f"the server counted {server_in} prompt tokens where the benchmark's tokenizer counts {sent} "
            f"(scenario input {raw.get('nominal_input')}): is --tokenizer the served model's?"
        )
    if isinstance(wanted, int) and wanted > 0 and abs(server_out - wanted) > tolerance * wanted:
        problems.append(
            f"the server generated {server_out} tokens where the scenario asks for {wanted} "
            "(does it honour max_completion_tokens / ignore_eos? for the chat backend add "
            f'--extra-request-body \'{{"max_tokens": {wanted}, "min_tokens": {wanted}}}\')'
        )
    if problems:
        return TokenCheck(False, "not comparable: " + "; ".join(problems), **counts)
    return TokenCheck(
        True,
        f"server counts match within {tolerance:.0%}: {server_in} prompt tokens sent as {sent} "
        f"(scenario {raw.get('nominal_input')}), {server_out} generated of {wanted}",
        **counts,
    )


def probe_scenarios(
    items: Sequence[tuple[str, list[str]]],
    base_url: str,
    *,
    python: str,
    env: Mapping[str, str],
    timeout_s: float = PROBE_TIMEOUT_S,
    worker: BenchWorker | None = None,
    log_path: Path | None = None,
    folder: RunFolder | None = None,
) -> dict[str, TokenCheck]:
    """Run token_probe.py once for all (scenario id, bench_serving arguments); one check each.
    With the stage's bench worker it runs there (sglang already imported, the tokenizer it loads
    kept for bench_serving), else as its own process. With `folder`, its start and end are
    recorded as start-up phases (start_phases.py)."""
    if not items:
        return {}
    mark(folder, "token-check", scenarios=len(items))
    checks = _probe(items, base_url, python=python, env=env, timeout_s=timeout_s, worker=worker, log_path=log_path)
    mark(folder, "token-check-done", verified=sum(c.verified is True for c in checks.values()))
    return checks


def _probe(
    items: Sequence[tuple[str, list[str]]],
    base_url: str,
    *,
    python: str,
    env: Mapping[str, str],
    timeout_s: float,
    worker: BenchWorker | None,
    log_path: Path | None,
) -> dict[str, TokenCheck]:
    request = {"base_url": base_url, "timeout": 120, "scenarios": [{"id": i, "bench_args": a} for i, a in items]}
    if worker is not None and worker.unavailable is None and log_path is not None:
        try:
            answers = worker.probe(request, script("token_probe.py"), log_path, timeout_s)
        except (WorkerUnavailable, TimeoutError, OSError) as exc:
            log.warning("token probe in the bench worker failed (%s): running it as its own process", exc)
        else:
            judged = {r["id"]: judge(r) for r in answers if r.get("id") in dict(items)}
            return {
                i: judged.get(i, TokenCheck(False, "token counts could not be checked: no answer")) for i, _ in items
            }
    try:
        proc = subprocess.run(
            [python, str(script("token_probe.py"))],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=timeout_s,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = f"the token probe did not run ({type(exc).__name__}: {exc})"
        return {i: TokenCheck(False, f"token counts could not be checked: {why}") for i, _ in items}
    found: dict[str, TokenCheck] = {}
    for line in proc.stdout.splitlines():
        try:
            raw = json.loads(line)
        except ValueError:
            continue
        if isinstance(raw, dict) and raw.get("id") in dict(items):
            found[raw["id"]] = judge(raw)
    last = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
    for i, _ in items:
        found.setdefault(i, TokenCheck(False, f"token counts could not be checked: the probe said {last[:500]}"))
    return found


def stage_tokenizer(
    folder: RunFolder,
    target: Any,
    tokenizer: str | Path | None = None,
    offline: bool = True,
) -> str | Path | None:
    """The speed stage's --tokenizer (choose_tokenizer), building the emulator's for the emulator."""
    emulated = bool(getattr(target, "emulated", False))
    chosen, source = choose_tokenizer(
        tokenizer, target, emulated=emulated, offline=offline, model_path=model_path_of(folder)
    )
    if chosen is None and emulated and offline:
        dest = folder.tokenizer
        if not (dest / "tokenizer.json").exists():
            make_offline_tokenizer(folder.mkdir(dest))
        chosen = dest
    print(f"tokenizer: {chosen or '(the served model name)'} ({source})")
    return chosen


def unchecked(reason: str) -> TokenCheck:
    return TokenCheck(None, reason)


def probe_env(child_env: Mapping[str, str]) -> dict[str, str]:
    """The probe sees what bench_serving sees (key, offline hub settings)."""
    return {**os.environ, **child_env}
