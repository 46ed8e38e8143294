"""The accuracy stage: run the chosen suites against one server, append rows, never stop early.

``run(folder, AccuracyOptions(...))`` runs each suite with its driver in its tool env; every
suite ends as rows in the folder's ``accuracy.jsonl`` -- numbers (status "ok"), or one row with status
"skipped" (something is not staged: the detail says how to stage it) or "error" (the tool
failed: the detail has its log tail). A suite already finished with the same settings in this
run folder is not run again.
"""

from __future__ import annotations

import time
from typing import Any

from ..origin import source_label
from ..progress import report_progress
from ..rundir import RunFolder
from ..speed.server_metrics import MetricsSampler
from ..target.locate import RunHandle, fetch_server_info, resolve_target, served_model
from ..tools import envs as toolenv
from . import vendor_verifier
from .common import EvalRow, StageMissing, append_rows, finished_fingerprints, read_rows, settings_fingerprint
from .options import SMOKE_SUITES, SUITES, AccuracyOptions
from .suites import RUNNERS, SuiteContext, kvv_overrides, suite_settings

__all__ = [
    "SMOKE_SUITES",
    "SUITES",
    "AccuracyOptions",
    "resolve_server",
    "run",
    "server_facts",
    "vendor_verifier",
]


def resolve_server(folder: RunFolder, options: AccuracyOptions) -> RunHandle:
    """base_url/model from the options, else from the deploy stage's handle.json in the folder."""
    return resolve_target(folder, base_url=options.base_url, model=options.model, api_key_env=options.api_key_env)


def server_facts(handle: RunHandle) -> dict[str, Any]:
    """Served model id and the emulated flag, from /v1/models and /server_info."""
    raw_key = handle.api_key()
    key = None if raw_key == "EMPTY" else raw_key
    info = fetch_server_info(handle.base_url, key, timeout=10) or {}
    return {
        "model": handle.model or served_model(handle.base_url, key),
        "emulated": bool(handle.emulated or info.get("emulated")),
        "rehearsal": bool(handle.rehearsal),
    }


def _fingerprint(ctx: SuiteContext, suite: str) -> str:
    """Everything that changes what a suite measures: changing any of it reruns the suite."""
    cfg = ctx.options
    settings: dict[str, Any] = {
        "model": ctx.server.model,
        "published": cfg.published,
        "limit": ctx.limit(suite),
        "datasets": cfg.datasets.get(suite),
        "base_url": ctx.server.base_url,
        "concurrency": cfg.concurrency,
    }
    if suite in ("toolcall-builtin", "k2vv-toolcall"):
        settings.update(
            toolcall_samples=cfg.toolcall_samples, toolcall_reference=cfg.toolcall_reference, k2vv_path=cfg.k2vv_path
        )
    if suite in ("ocrbench", "mmmu-pro"):
        settings.update(kvv_path=cfg.kvv_path, overrides=kvv_overrides(cfg))
    return settings_fingerprint(suite, settings)


def run(folder: RunFolder, options: AccuracyOptions) -> list[EvalRow]:
    """The accuracy stage: every suite in ``options.suites`` against the folder's server (or
    options.base_url); returns (and appends to the folder's accuracy.jsonl) all rows of this call."""
    handle = resolve_server(folder, options)
    ctx = SuiteContext(folder, options, handle, server_facts(handle))
    done = set() if options.rerun else finished_fingerprints(folder)
    all_rows: list[EvalRow] = []
    for suite in options.suites:
        key = _fingerprint(ctx, suite)
        if key in done:
            print(f"{suite}: already finished in {folder.path} with these settings; skipped (rerun=True to repeat)")
            all_rows += [r for r in read_rows(folder) if r.fingerprint == key]
            continue
        start = time.monotonic()
        report_progress(ctx.folder, "accuracy", f"{suite}: started ({SUITES[suite][0]})", milestone=True)
        # the eval tools send no warm-up: their first requests are the measured ones (scrape_schedule.py)
        sampler = MetricsSampler(
            ctx.handle.base_url, folder=ctx.folder, scenario=f"accuracy-{suite}", warmup_requests=0
        )
        try:
            with sampler:  # what the server did while the suite ran (speed/server_metrics.py)
                rows = RUNNERS[suite](ctx, suite)
        except (StageMissing, toolenv.ToolEnvMissing, FileNotFoundError) as exc:
            rows = [_status_row(ctx, suite, "skipped", str(exc), start)]
        except Exception as exc:  # noqa: BLE001 - one failing suite must not stop the others
            rows = [_status_row(ctx, suite, "error", f"{type(exc).__name__}: {exc}", start)]
        server = sampler.summary()
        for r in rows:
            r.fingerprint = key
            r.server = server
        append_rows(ctx.folder, rows)
        statuses = sorted({r.status for r in rows})
        report_progress(
            ctx.folder,
            "accuracy",
            f"{suite}: {', '.join(statuses)} in {time.monotonic() - start:.1f} s",
            milestone=True,
        )
        for r in rows:
            if r.status != "ok":
                print(f"{suite}: {r.status.upper()}: {r.detail}")
        all_rows += rows
    return all_rows


def _status_row(ctx: SuiteContext, suite: str, status: str, detail: str, start: float) -> EvalRow:
    return EvalRow(
        suite=suite,
        metric="status",
        status=status,
        detail=detail,
        tool=SUITES[suite][0],
        settings=suite_settings(ctx, suite, {}),
        emulated=ctx.emulated,
        rehearsal=ctx.rehearsal,
        source=source_label(ctx.emulated, rehearsal=ctx.rehearsal),
        duration_s=round(time.monotonic() - start, 3),
    )
