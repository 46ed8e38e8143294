"""What one check found (`CheckResult`), and the invoke stage's result file, run_dir/invoke.json."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, Field, computed_field

from ..origin import source_label
from ..progress import report_progress
from ..rundir import RunFolder

Status = Literal["pass", "fail", "skip"]
Suite = Literal["feature", "agentic"]


class CheckResult(BaseModel):
    """One feature check: its verdict, why, what it cost and the redacted exchange behind it."""

    name: str
    status: Status  # the verdict
    reason: str
    suite: Suite = "feature"  # feature checks (checks.py) or the agentic suite (agentic.py)
    expected: str | None = None  # agentic cases: what SGLang with the kimi_k2 parsers returns
    observed: list[dict[str, Any]] | None = None  # agentic cases: what each turn showed
    latency_ms: float | None = None  # wall time of the check's request(s)
    ttft_ms: float | None = None  # streamed checks: first reasoning, content or tool-call delta
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    emulated: bool = False
    rehearsal: bool = False  # real SGLang serving a tiny model on the CPU (launcher sglang-cpu)
    model: str | None = None
    base_url: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)
    transcript: list[dict[str, Any]] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool | None:
        """True/False for pass/fail; None for skip (a skip is neither)."""
        return None if self.status == "skip" else self.status == "pass"


class ChecksFailed(RuntimeError):
    """Raised by `raise_if_failed` (the notebook's fail_on_error)."""


def counts(results: list[CheckResult]) -> dict[str, int]:
    return {k: sum(r.status == k for r in results) for k in ("pass", "fail", "skip")}


def summary_table(results: list[CheckResult]) -> pd.DataFrame:
    """One row per check: verdict and why, timings (labelled emulated or measured), tokens."""
    rows = [
        {
            "check": r.name,
            "status": r.status.upper(),
            "reason": r.reason,
            "latency_ms": None if r.latency_ms is None else round(r.latency_ms, 1),
            "ttft_ms": None if r.ttft_ms is None else round(r.ttft_ms, 1),
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "source": source_label(r.emulated, upper=True, rehearsal=r.rehearsal),
        }
        for r in results
    ]
    table = pd.DataFrame(
        rows,
        columns=["check", "status", "reason", "latency_ms", "ttft_ms", "prompt_tokens", "completion_tokens", "source"],
    )
    return table.astype({"prompt_tokens": "Int64", "completion_tokens": "Int64"})


def print_progress(result: CheckResult) -> None:
    """A one-line log per finished check (pass this as run_all's progress)."""
    source = source_label(result.emulated, rehearsal=result.rehearsal)
    ms = "" if result.latency_ms is None else f" ({result.latency_ms:.0f} ms {source})"
    print(f"{result.name:<17} {result.status.upper():<4}{ms}  {result.reason}", flush=True)


def progress_to(folder: RunFolder | None) -> Callable[[CheckResult], None]:
    """run_all's progress callback: the one-line log, and the same line for the runbook to relay."""

    def show(result: CheckResult) -> None:
        print_progress(result)
        report_progress(folder, "invoke", f"{result.name}: {result.status}", milestone=result.status == "fail")

    return show


def save(results: list[CheckResult], folder: RunFolder, api_key_env: str | None = None) -> Path:
    """Write the folder's invoke.json (redacted), flagged emulated when any check ran on the emulator."""
    folder.add_secret_env(api_key_env)
    doc = {
        "stage": "invoke",
        "written_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "emulated": any(r.emulated for r in results),
        "rehearsal": any(r.rehearsal for r in results),
        "source": source_label(any(r.emulated for r in results), rehearsal=any(r.rehearsal for r in results)),
        "counts": counts(results),
        # "passed" needs at least one check that ran and passed: all-skipped is not a pass
        "all_passed": any(r.status == "pass" for r in results) and not any(r.status == "fail" for r in results),
        "results": [r.model_dump(mode="json") for r in results],
    }
    return folder.save_json(folder.invoke, doc)


def load(run_dir: str | Path) -> list[CheckResult]:
    doc = json.loads(RunFolder.of(run_dir).invoke.read_text())
    return [CheckResult.model_validate(r) for r in doc["results"]]


def last_exchange(result: CheckResult, limit: int = 3000) -> str:
    """The check's last request/response as indented JSON (already redacted), cut to `limit`."""
    if not result.transcript:
        return "(no exchange with the server was recorded)"
    text = json.dumps(result.transcript[-1], indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "\n..."


def raise_if_failed(results: list[CheckResult]) -> None:
    """Fail loudly (the notebook's fail_on_error) naming each failed check and why."""
    failed = [r for r in results if r.status == "fail"]
    if failed:
        raise ChecksFailed(
            f"{len(failed)} invoke check(s) failed: " + "; ".join(f"{r.name}: {r.reason}" for r in failed)
        )
