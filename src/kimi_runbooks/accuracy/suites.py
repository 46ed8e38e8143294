"""One runner per suite: run its tool in its env with the published or smoke settings, return rows."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ..origin import source_label
from ..rundir import RunFolder
from ..target.locate import RunHandle
from ..target.served_limits import read_served_limits
from ..tools import envs as toolenv
from . import inspect_eval, sgl_eval, toolcall_eval, vendor_verifier
from .common import Endpoint, EvalRow, ToolJob
from .options import SGL_EVAL_SUITES, SMOKE_LIMIT, SMOKE_TOOLCALL_MAX_TOKENS, SUITES, AccuracyOptions
from .references import reference_entry
from .toolcall_samples import write_ci_samples


class SuiteContext:
    """What every suite runner needs for one stage run."""

    def __init__(self, folder: RunFolder, options: AccuracyOptions, handle: RunHandle, facts: dict[str, Any]):
        self.options, self.handle = options, handle
        self.server = Endpoint(handle.openai_base_url, facts["model"], handle.api_key())
        self.emulated: bool = bool(options.emulated if options.emulated is not None else facts["emulated"])
        self.rehearsal: bool = bool(facts.get("rehearsal"))
        self.limits = read_served_limits(handle.base_url, facts["model"], handle.api_key())
        folder.add_secret_env(handle.api_key_env)
        self.folder = folder
        self.work = self.folder.accuracy_work

    def max_tokens(self, wanted: int | None) -> int | None:
        """`wanted` as the server can hold it (its context; a rehearsal's small budget: served_limits.py);
        None (the tool's own default) stays None unless the server bounds it."""
        if wanted is None and not (self.rehearsal or self.limits.max_model_len):
            return None
        return self.limits.completion_budget(wanted or 1 << 30, rehearsal=self.rehearsal)

    def job(self, name: str) -> ToolJob:
        """A driver's run of its tool for this stage: this server, folder and timeout, its files in work/name."""
        return ToolJob(self.server, self.work / name, self.folder, self.options.timeout_s)

    def limit(self, suite: str) -> int | None:
        if suite in self.options.limits:
            return self.options.limits[suite]
        return None if self.options.published else SMOKE_LIMIT


def _rows(
    ctx: SuiteContext,
    suite: str,
    metrics: list[dict[str, Any]],
    settings: dict[str, Any],
    *,
    tool: str,
    version: str | None,
    duration: float,
    output: str | None,
) -> list[EvalRow]:
    return [
        EvalRow(
            suite=suite,
            settings=settings,
            tool=tool,
            tool_version=version,
            duration_s=round(duration, 3),
            emulated=ctx.emulated,
            rehearsal=ctx.rehearsal,
            source=source_label(ctx.emulated, rehearsal=ctx.rehearsal),
            output=output,
            **m,
        )
        for m in metrics
    ]


def suite_settings(ctx: SuiteContext, suite: str, extra: dict[str, Any]) -> dict[str, Any]:
    return {"reference_suite": SUITES[suite][1], "published": ctx.options.published, "model": ctx.server.model, **extra}


# --------------------------------------------------------------------------- suite runners


def _toolcall_samples(ctx: SuiteContext) -> tuple[Path, Path | None, str]:
    if ctx.options.toolcall_samples:
        ref = Path(ctx.options.toolcall_reference) if ctx.options.toolcall_reference else None
        return Path(ctx.options.toolcall_samples), ref, "given"
    if ctx.options.k2vv_path:
        official = Path(ctx.options.k2vv_path) / vendor_verifier.K2VV_SAMPLES
        if official.is_file():
            ref = Path(ctx.options.toolcall_reference) if ctx.options.toolcall_reference else None
            return official, ref, "official"
    path = ctx.work / RunFolder.CI_TOOLCALL_SAMPLES / RunFolder.SAMPLES
    expected = ctx.work / RunFolder.CI_TOOLCALL_SAMPLES / RunFolder.EXPECTED
    write_ci_samples(path, expected, model=ctx.server.model, folder=ctx.folder)
    return path, Path(ctx.options.toolcall_reference) if ctx.options.toolcall_reference else expected, "ci-generated"


def _run_toolcall_builtin(ctx: SuiteContext, suite: str) -> list[EvalRow]:
    samples, reference, kind = _toolcall_samples(ctx)
    ref = reference_entry("k2vv-toolcall").get("settings") or {}
    settings = suite_settings(
        ctx,
        suite,
        {
            "samples": str(samples),
            "samples_kind": kind,
            "reference_results": str(reference) if reference else None,
            "temperature": ref.get("temperature", 1.0),
            "max_tokens": ctx.max_tokens(
                ref.get("max_tokens", 64000) if ctx.options.published else SMOKE_TOOLCALL_MAX_TOKENS
            ),
            "concurrency": ctx.options.concurrency or (ref.get("concurrency", 256) if ctx.options.published else 8),
            "limit": ctx.limit(suite) if kind == "official" else ctx.options.limits.get(suite),
        },
    )
    out = ctx.work / "toolcall-builtin"
    run = toolcall_eval.run_toolcall_eval(
        samples,
        toolcall_eval.ToolcallServer(ctx.server.base_url, ctx.server.model, ctx.server.api_key),
        out / RunFolder.TOOL_RESULTS,
        toolcall_eval.ToolcallRequests(
            concurrency=settings["concurrency"],
            temperature=settings["temperature"],
            max_tokens=settings["max_tokens"],
            limit=settings["limit"],
        ),
        summary_path=out / RunFolder.TOOL_SUMMARY,
        reference_path=reference,
        folder=ctx.folder,
    )
    return _rows(
        ctx,
        suite,
        toolcall_eval.summary_metrics(run.summary, run.f1),
        settings,
        tool=SUITES[suite][0],
        version=f"kimi-runbooks {version('kimi-runbooks')}",
        duration=run.duration_s,
        output=str(run.results_path),
    )


def _run_k2vv(ctx: SuiteContext, suite: str) -> list[EvalRow]:
    checkout = vendor_verifier.ensure_checkout(ctx.options.k2vv_path, vendor_verifier.K2VV, clone=ctx.options.clone)
    python = vendor_verifier.checkout_python(checkout, None)
    samples = (
        Path(ctx.options.toolcall_samples) if ctx.options.toolcall_samples else checkout / vendor_verifier.K2VV_SAMPLES
    )
    ref = reference_entry("k2vv-toolcall").get("settings") or {}
    conc = ctx.options.concurrency or (ref.get("concurrency") if ctx.options.published else 8)
    max_tokens = ctx.max_tokens(ref.get("max_tokens") if ctx.options.published else SMOKE_TOOLCALL_MAX_TOKENS)
    limit = ctx.limit(suite)
    job = ctx.job("k2vv")
    settings = suite_settings(
        ctx,
        suite,
        {
            "samples": str(samples),
            "concurrency": conc,
            "limit": limit,
            "temperature": ref.get("temperature"),
            "max_tokens": max_tokens,
        },
    )
    if limit is not None and samples.is_file():
        # tool_calls_eval.py has no limit flag: it runs on the first `limit` requests, copied here
        samples = vendor_verifier.first_lines(
            samples, job.out_dir / RunFolder.FIRST_SAMPLES.format(limit=limit), limit, ctx.folder
        )
        settings["samples_run"] = str(samples)
    k2vv = vendor_verifier.K2vvConfig(samples, concurrency=conc, max_tokens=max_tokens)
    run, results_path, summary_path = vendor_verifier.run_k2vv(k2vv, job, checkout=checkout, python=python)
    results = toolcall_eval.read_results(results_path)
    summary = toolcall_eval.read_summary(summary_path) if summary_path.exists() else toolcall_eval.summarize(results)
    summary.setdefault(
        "schema_accuracy",
        (summary["successful_tool_call_count"] / summary["finish_tool_calls"])
        if summary["finish_tool_calls"]
        else None,
    )
    f1 = (
        toolcall_eval.trigger_f1(results, toolcall_eval.read_results(ctx.options.toolcall_reference))
        if ctx.options.toolcall_reference
        else None
    )
    return _rows(
        ctx,
        suite,
        toolcall_eval.summary_metrics(summary, f1),
        settings,
        tool=SUITES[suite][0],
        version=_git_rev(checkout),
        duration=run.duration_s,
        output=str(results_path),
    )


def _git_rev(checkout: Path) -> str | None:
    proc = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return f"git {proc.stdout.strip()}" if proc.returncode == 0 else None


def _run_sgl_eval(ctx: SuiteContext, suite: str) -> list[EvalRow]:
    bench = SGL_EVAL_SUITES[suite]
    env = toolenv.tool_env("sgl-eval")
    cfg = sgl_eval.published_config(bench) if ctx.options.published else sgl_eval.smoke_config(bench)
    limit = ctx.limit(suite)
    cfg = replace(
        cfg,
        num_examples=limit,
        from_dataset=ctx.options.datasets.get(suite),
        num_threads=ctx.options.concurrency or cfg.num_threads,
    )
    if cfg.max_tokens:
        cfg = replace(cfg, max_tokens=ctx.max_tokens(cfg.max_tokens))
    settings = suite_settings(ctx, suite, cfg.settings())
    run, metrics_path, metrics = sgl_eval.run(
        cfg, ctx.job("sgl-eval"), python_argv=env.argv(), env=toolenv.OFFLINE_ENV if ctx.emulated else None
    )
    return _rows(
        ctx,
        suite,
        metrics,
        settings,
        tool="sgl-eval",
        version=f"sgl-eval {env.version}",
        duration=run.duration_s,
        output=str(metrics_path),
    )


def _run_inspect(ctx: SuiteContext, suite: str) -> list[EvalRow]:
    env = toolenv.tool_env("inspect")
    cfg = inspect_eval.published_config() if ctx.options.published else inspect_eval.smoke_config()
    cfg = replace(
        cfg,
        limit=ctx.limit(suite),
        dataset_path=ctx.options.datasets.get(suite),
        max_connections=ctx.options.concurrency or cfg.max_connections,
    )
    if cfg.max_tokens:
        cfg = replace(cfg, max_tokens=ctx.max_tokens(cfg.max_tokens))
    settings = suite_settings(ctx, suite, cfg.settings())
    run, log, summary, metrics = inspect_eval.run(cfg, ctx.job("inspect"), python=env.python)
    settings["epochs"] = summary.get("epochs")
    vers = toolenv.versions(env)
    return _rows(
        ctx,
        suite,
        metrics,
        settings,
        tool=SUITES[suite][0],
        version=f"inspect-ai {vers.get('inspect-ai')}, inspect-evals {vers.get('inspect-evals')}",
        duration=run.duration_s,
        output=str(log),
    )


def _run_kvv(ctx: SuiteContext, suite: str) -> list[EvalRow]:
    checkout = vendor_verifier.ensure_checkout(ctx.options.kvv_path, vendor_verifier.KVV, clone=ctx.options.clone)
    try:
        fallback = toolenv.tool_env("inspect").python
    except toolenv.ToolEnvMissing:
        fallback = None
    python = vendor_verifier.checkout_python(checkout, fallback)
    overrides = kvv_overrides(ctx.options)
    limit = ctx.limit(suite)
    settings = suite_settings(ctx, suite, {"overrides": overrides, "checkout": str(checkout), "limit": limit})
    run, log = vendor_verifier.run_kvv(
        suite, ctx.job(f"kvv-{suite}"), checkout=checkout, python=python, overrides=overrides, limit=limit
    )
    summary = inspect_eval.read_eval_log(log, fallback or python)
    return _rows(
        ctx,
        suite,
        inspect_eval.log_metrics(summary),
        settings,
        tool=SUITES[suite][0],
        version=_git_rev(checkout),
        duration=run.duration_s,
        output=str(log),
    )


def kvv_overrides(cfg: AccuracyOptions) -> dict[str, Any]:
    """eval.py flags changed from the published command (smoke: a small token budget)."""
    overrides: dict[str, Any] = {}
    if cfg.concurrency:
        overrides["max_connections"] = cfg.concurrency
    if not cfg.published:
        overrides["max_tokens"] = 1024
    return overrides


RUNNERS: dict[str, Callable[[SuiteContext, str], list[EvalRow]]] = {
    "toolcall-builtin": _run_toolcall_builtin,
    "k2vv-toolcall": _run_k2vv,
    **{s: _run_sgl_eval for s in SGL_EVAL_SUITES},
    "gpqa-diamond": _run_inspect,
    "ocrbench": _run_kvv,
    "mmmu-pro": _run_kvv,
}
