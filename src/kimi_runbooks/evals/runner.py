"""The accuracy stage: run the chosen suites against one server, append rows, never stop early.

``run_accuracy(AccuracyConfig(...))`` runs each suite with its driver in its tool env; every
suite ends as rows in ``run_dir/accuracy.jsonl`` -- numbers (status "ok"), or one row with status
"skipped" (something is not staged: the detail says how to stage it) or "error" (the tool
failed: the detail has its log tail). A suite already finished with the same settings in this
run folder is not run again.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from importlib.metadata import version
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import toolenv
from ..runinfo import RunHandle, fetch_server_info, resolve_target, served_model, source_label
from . import inspect_eval, sgl_eval, toolcall_eval, vendor_verifier
from .common import EvalRow, StageMissing, append_rows, finished_fingerprints, read_rows, settings_fingerprint
from .compare import reference_entry
from .toolcall_samples import write_ci_samples

#: suite id -> (tool label, reference suite, one-line description)
SUITES: dict[str, tuple[str, str, str]] = {
    "toolcall-builtin": ("kimi-runbooks built-in tool-call eval", "k2vv-toolcall",
                         "K2-Vendor-Verifier's formats and definitions, plus trigger F1"),
    "k2vv-toolcall": ("K2-Vendor-Verifier tool_calls_eval.py", "k2vv-toolcall", "needs a checkout (k2vv_path)"),
    "aime25": ("sgl-eval", "aime25", "AIME 2025, data in the sgl-eval wheel"),
    "sgl-eval:gsm8k": ("sgl-eval", "gsm8k", "downloads GSM8K unless a dataset path is given"),
    "sgl-eval:gpqa": ("sgl-eval", "gpqa-diamond", "downloads GPQA unless a dataset path is given"),
    "sgl-eval:mmmu_pro": ("sgl-eval", "mmmu-pro", "downloads MMMU-Pro (images) at run time"),
    "gpqa-diamond": ("inspect-ai + inspect_evals", "gpqa-diamond", "downloads the CSV unless a dataset path is given"),
    "ocrbench": ("Kimi-Vendor-Verifier eval.py", "ocrbench", "needs a checkout (kvv_path)"),
    "mmmu-pro": ("Kimi-Vendor-Verifier eval.py", "mmmu-pro", "needs a checkout (kvv_path)"),
}
SMOKE_SUITES = ["toolcall-builtin", "aime25"]
SGL_EVAL_SUITES = {"aime25": "aime25", "sgl-eval:gsm8k": "gsm8k", "sgl-eval:gpqa": "gpqa", "sgl-eval:mmmu_pro": "mmmu_pro"}
SMOKE_LIMIT = 2
SMOKE_TOOLCALL_MAX_TOKENS = 2048  # smoke runs of the tool-call suites (published: 64000)


class AccuracyConfig(BaseModel):
    """Parameters of the accuracy stage (the notebook's parameters cell maps onto these)."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Path
    base_url: str | None = None  # server root (no /v1); None -> run_dir/handle.json
    model: str | None = None
    api_key_env: str | None = None
    suites: list[str] = Field(default_factory=lambda: list(SMOKE_SUITES))
    limits: dict[str, int] = Field(default_factory=dict)
    published: bool = False  # True: the published settings in full; False: smoke settings
    k2vv_path: str | None = None
    kvv_path: str | None = None
    datasets: dict[str, str] = Field(default_factory=dict)  # suite -> staged dataset path
    toolcall_samples: str | None = None  # None: official file in the K2VV checkout, else the CI set
    toolcall_reference: str | None = None  # reference results JSONL for the trigger F1
    concurrency: int | None = None
    emulated: bool | None = None  # None: ask /server_info
    rerun: bool = False
    timeout_s: float | None = None
    clone: bool = True

    @field_validator("suites")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in SUITES]
        if unknown:
            raise ValueError(f"unknown suite(s) {unknown}; choose from {sorted(SUITES)}")
        return value


def resolve_server(cfg: AccuracyConfig) -> RunHandle:
    """base_url/model from the parameters, else from the deploy stage's handle.json."""
    return resolve_target(cfg.run_dir, base_url=cfg.base_url, model=cfg.model, api_key_env=cfg.api_key_env)


def server_facts(handle: RunHandle) -> dict[str, Any]:
    """Served model id and the emulated flag, from /v1/models and /server_info."""
    key = handle.api_key()
    key = None if key == "EMPTY" else key
    info = fetch_server_info(handle.base_url, key, timeout=10) or {}
    return {"model": handle.model or served_model(handle.base_url, key),
            "emulated": bool(handle.emulated or info.get("emulated"))}


class _Ctx:
    """What every suite runner needs for one stage run."""

    def __init__(self, cfg: AccuracyConfig, handle: RunHandle, facts: dict[str, Any]):
        self.cfg, self.handle = cfg, handle
        self.model: str = facts["model"]
        self.emulated: bool = bool(cfg.emulated if cfg.emulated is not None else facts["emulated"])
        self.api_key = handle.api_key()
        self.secrets = (handle.api_key_env,)
        self.base = handle.openai_base_url
        self.work = Path(cfg.run_dir) / "accuracy"

    def limit(self, suite: str) -> int | None:
        if suite in self.cfg.limits:
            return self.cfg.limits[suite]
        return None if self.cfg.published else SMOKE_LIMIT


def _rows(ctx: _Ctx, suite: str, metrics: list[dict[str, Any]], settings: dict[str, Any], *, tool: str,
          version: str | None, duration: float, output: str | None) -> list[EvalRow]:
    return [EvalRow(suite=suite, settings=settings, tool=tool, tool_version=version, duration_s=round(duration, 3),
                    emulated=ctx.emulated, source=source_label(ctx.emulated), output=output, **m)
            for m in metrics]


def _settings(ctx: _Ctx, suite: str, extra: dict[str, Any]) -> dict[str, Any]:
    return {"reference_suite": SUITES[suite][1], "published": ctx.cfg.published, "model": ctx.model, **extra}


# --------------------------------------------------------------------------- suite runners


def _toolcall_samples(ctx: _Ctx) -> tuple[Path, Path | None, str]:
    if ctx.cfg.toolcall_samples:
        ref = Path(ctx.cfg.toolcall_reference) if ctx.cfg.toolcall_reference else None
        return Path(ctx.cfg.toolcall_samples), ref, "given"
    if ctx.cfg.k2vv_path:
        official = Path(ctx.cfg.k2vv_path) / "tool-calls" / "samples.jsonl"
        if official.is_file():
            ref = Path(ctx.cfg.toolcall_reference) if ctx.cfg.toolcall_reference else None
            return official, ref, "official"
    path = ctx.work / "toolcall-ci" / "samples.jsonl"
    expected = ctx.work / "toolcall-ci" / "expected_results.jsonl"
    write_ci_samples(path, expected, model=ctx.model)
    return path, Path(ctx.cfg.toolcall_reference) if ctx.cfg.toolcall_reference else expected, "ci-generated"


def _run_toolcall_builtin(ctx: _Ctx, suite: str) -> list[EvalRow]:
    samples, reference, kind = _toolcall_samples(ctx)
    ref = reference_entry("k2vv-toolcall").get("settings") or {}
    settings = _settings(ctx, suite, {
        "samples": str(samples), "samples_kind": kind, "reference_results": str(reference) if reference else None,
        "temperature": ref.get("temperature", 1.0),
        "max_tokens": ref.get("max_tokens", 64000) if ctx.cfg.published else SMOKE_TOOLCALL_MAX_TOKENS,
        "concurrency": ctx.cfg.concurrency or (ref.get("concurrency", 256) if ctx.cfg.published else 8),
        "limit": ctx.limit(suite) if kind == "official" else ctx.cfg.limits.get(suite)})
    out = ctx.work / "toolcall-builtin"
    run = toolcall_eval.run_toolcall_eval(
        samples, base_url=ctx.base, model=ctx.model, results_path=out / "results.jsonl",
        summary_path=out / "summary.json", api_key=ctx.api_key, api_key_env=ctx.handle.api_key_env,
        concurrency=settings["concurrency"], temperature=settings["temperature"], max_tokens=settings["max_tokens"],
        limit=settings["limit"], reference_path=reference)
    return _rows(ctx, suite, toolcall_eval.summary_metrics(run.summary, run.f1), settings,
                 tool=SUITES[suite][0], version=f"kimi-runbooks {version('kimi-runbooks')}",
                 duration=run.duration_s, output=str(run.results_path))


def _run_k2vv(ctx: _Ctx, suite: str) -> list[EvalRow]:
    checkout = vendor_verifier.ensure_checkout(ctx.cfg.k2vv_path, url=vendor_verifier.K2VV_URL,
                                               marker=vendor_verifier.K2VV_MARKER, name="K2-Vendor-Verifier",
                                               clone=ctx.cfg.clone)
    python = vendor_verifier.checkout_python(checkout, None)
    samples = Path(ctx.cfg.toolcall_samples) if ctx.cfg.toolcall_samples else checkout / "tool-calls" / "samples.jsonl"
    ref = reference_entry("k2vv-toolcall").get("settings") or {}
    conc = ctx.cfg.concurrency or (ref.get("concurrency") if ctx.cfg.published else 8)
    max_tokens = ref.get("max_tokens") if ctx.cfg.published else SMOKE_TOOLCALL_MAX_TOKENS
    limit = ctx.limit(suite)
    out_dir = ctx.work / "k2vv"
    settings = _settings(ctx, suite, {"samples": str(samples), "concurrency": conc, "limit": limit,
                                      "temperature": ref.get("temperature"), "max_tokens": max_tokens})
    if limit is not None and samples.is_file():
        # tool_calls_eval.py has no limit flag: it runs on the first `limit` requests, copied here
        samples = vendor_verifier.first_lines(samples, out_dir / f"samples.first{limit}.jsonl", limit)
        settings["samples_run"] = str(samples)
    run, results_path, summary_path = vendor_verifier.run_k2vv(
        checkout=checkout, python=python, samples=samples, base_url=ctx.base, model=ctx.model, api_key=ctx.api_key,
        out_dir=out_dir, concurrency=conc, max_tokens=max_tokens, secret_envs=ctx.secrets, timeout=ctx.cfg.timeout_s)
    results = toolcall_eval.read_results(results_path)
    summary = toolcall_eval.read_summary(summary_path) if summary_path.exists() else toolcall_eval.summarize(results)
    summary.setdefault("schema_accuracy", (summary["successful_tool_call_count"] / summary["finish_tool_calls"])
                       if summary["finish_tool_calls"] else None)
    f1 = (toolcall_eval.trigger_f1(results, toolcall_eval.read_results(ctx.cfg.toolcall_reference))
          if ctx.cfg.toolcall_reference else None)
    return _rows(ctx, suite, toolcall_eval.summary_metrics(summary, f1), settings, tool=SUITES[suite][0],
                 version=_git_rev(checkout), duration=run.duration_s, output=str(results_path))


def _git_rev(checkout: Path) -> str | None:
    proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False)
    return f"git {proc.stdout.strip()}" if proc.returncode == 0 else None


def _run_sgl_eval(ctx: _Ctx, suite: str) -> list[EvalRow]:
    bench = SGL_EVAL_SUITES[suite]
    env = toolenv.tool_env("sgl-eval")
    cfg = sgl_eval.published_config(bench) if ctx.cfg.published else sgl_eval.smoke_config(bench)
    limit = ctx.limit(suite)
    cfg = replace(cfg, num_examples=limit, from_dataset=ctx.cfg.datasets.get(suite),
                  num_threads=ctx.cfg.concurrency or cfg.num_threads)
    settings = _settings(ctx, suite, cfg.settings())
    run, metrics_path, metrics = sgl_eval.run(cfg, python_argv=env.argv(), base_url=ctx.base, model=ctx.model,
                                              api_key=ctx.api_key, out_dir=ctx.work / "sgl-eval",
                                              secret_envs=ctx.secrets, timeout=ctx.cfg.timeout_s,
                                              env=toolenv.OFFLINE_ENV if ctx.emulated else None)
    return _rows(ctx, suite, metrics, settings, tool="sgl-eval", version=f"sgl-eval {env.version}", duration=run.duration_s,
                 output=str(metrics_path))


def _run_inspect(ctx: _Ctx, suite: str) -> list[EvalRow]:
    env = toolenv.tool_env("inspect")
    cfg = inspect_eval.published_config() if ctx.cfg.published else inspect_eval.smoke_config()
    cfg = replace(cfg, limit=ctx.limit(suite), dataset_path=ctx.cfg.datasets.get(suite),
                  max_connections=ctx.cfg.concurrency or cfg.max_connections)
    settings = _settings(ctx, suite, cfg.settings())
    run, log, summary, metrics = inspect_eval.run(cfg, python=env.python, model=ctx.model, base_url=ctx.base,
                                                  api_key=ctx.api_key, work_dir=ctx.work / "inspect",
                                                  secret_envs=ctx.secrets, timeout=ctx.cfg.timeout_s)
    settings["epochs"] = summary.get("epochs")
    vers = toolenv.versions(env)
    return _rows(ctx, suite, metrics, settings, tool=SUITES[suite][0],
                 version=f"inspect-ai {vers.get('inspect-ai')}, inspect-evals {vers.get('inspect-evals')}",
                 duration=run.duration_s, output=str(log))


def _run_kvv(ctx: _Ctx, suite: str) -> list[EvalRow]:
    checkout = vendor_verifier.ensure_checkout(ctx.cfg.kvv_path, url=vendor_verifier.KVV_URL,
                                               marker=vendor_verifier.KVV_MARKER, name="Kimi-Vendor-Verifier",
                                               clone=ctx.cfg.clone)
    try:
        fallback = toolenv.tool_env("inspect").python
    except toolenv.ToolEnvMissing:
        fallback = None
    python = vendor_verifier.checkout_python(checkout, fallback)
    overrides = _kvv_overrides(ctx.cfg)
    limit = ctx.limit(suite)
    settings = _settings(ctx, suite, {"overrides": overrides, "checkout": str(checkout), "limit": limit})
    run, log = vendor_verifier.run_kvv(suite, checkout=checkout, python=python, base_url=ctx.base, model=ctx.model,
                                       api_key=ctx.api_key, out_dir=ctx.work / f"kvv-{suite}", overrides=overrides,
                                       limit=limit, secret_envs=ctx.secrets, timeout=ctx.cfg.timeout_s)
    summary = inspect_eval.read_eval_log(log, fallback or python)
    return _rows(ctx, suite, inspect_eval.log_metrics(summary), settings, tool=SUITES[suite][0],
                 version=_git_rev(checkout), duration=run.duration_s, output=str(log))


def _kvv_overrides(cfg: AccuracyConfig) -> dict[str, Any]:
    """eval.py flags changed from the published command (smoke: a small token budget)."""
    overrides: dict[str, Any] = {}
    if cfg.concurrency:
        overrides["max_connections"] = cfg.concurrency
    if not cfg.published:
        overrides["max_tokens"] = 1024
    return overrides


def _fingerprint(ctx: _Ctx, suite: str) -> str:
    """Everything that changes what a suite measures: changing any of it reruns the suite."""
    cfg = ctx.cfg
    settings: dict[str, Any] = {"model": ctx.model, "published": cfg.published, "limit": ctx.limit(suite),
                                "datasets": cfg.datasets.get(suite), "base_url": ctx.base,
                                "concurrency": cfg.concurrency}
    if suite in ("toolcall-builtin", "k2vv-toolcall"):
        settings.update(toolcall_samples=cfg.toolcall_samples, toolcall_reference=cfg.toolcall_reference,
                        k2vv_path=cfg.k2vv_path)
    if suite in ("ocrbench", "mmmu-pro"):
        settings.update(kvv_path=cfg.kvv_path, overrides=_kvv_overrides(cfg))
    return settings_fingerprint(suite, settings)


RUNNERS: dict[str, Callable[[_Ctx, str], list[EvalRow]]] = {
    "toolcall-builtin": _run_toolcall_builtin,
    "k2vv-toolcall": _run_k2vv,
    **{s: _run_sgl_eval for s in SGL_EVAL_SUITES},
    "gpqa-diamond": _run_inspect,
    "ocrbench": _run_kvv,
    "mmmu-pro": _run_kvv,
}


def run_accuracy(cfg: AccuracyConfig) -> list[EvalRow]:
    """Run every suite in ``cfg.suites``; returns (and appends) all rows of this call."""
    handle = resolve_server(cfg)
    ctx = _Ctx(cfg, handle, server_facts(handle))
    done = set() if cfg.rerun else finished_fingerprints(cfg.run_dir)
    all_rows: list[EvalRow] = []
    for suite in cfg.suites:
        key = _fingerprint(ctx, suite)
        if key in done:
            print(f"{suite}: already finished in {cfg.run_dir} with these settings; skipped (rerun=True to repeat)")
            all_rows += [r for r in read_rows(cfg.run_dir) if r.fingerprint == key]
            continue
        start = time.monotonic()
        try:
            rows = RUNNERS[suite](ctx, suite)
        except (StageMissing, toolenv.ToolEnvMissing, FileNotFoundError) as exc:
            rows = [_status_row(ctx, suite, "skipped", str(exc), start)]
        except Exception as exc:  # noqa: BLE001 - one failing suite must not stop the others
            rows = [_status_row(ctx, suite, "error", f"{type(exc).__name__}: {exc}", start)]
        for r in rows:
            r.fingerprint = key
        append_rows(cfg.run_dir, rows, ctx.secrets)
        for r in rows:
            if r.status != "ok":
                print(f"{suite}: {r.status.upper()}: {r.detail}")
        all_rows += rows
    return all_rows


def _status_row(ctx: _Ctx, suite: str, status: str, detail: str, start: float) -> EvalRow:
    return EvalRow(suite=suite, metric="status", status=status, detail=detail, tool=SUITES[suite][0],
                   settings=_settings(ctx, suite, {}), emulated=ctx.emulated,
                   source=source_label(ctx.emulated), duration_s=round(time.monotonic() - start, 3))
