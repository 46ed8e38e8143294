"""The run report: what a reviewer reads without Jupyter.

`collect(run_dir)` gathers what each stage left in the run folder (plan, manifest, invoke.json,
bench.jsonl, accuracy.jsonl, stages.jsonl); a stage that left nothing is "not run", with the
reason, never filled in. `verdict`, `warnings` and the `*_table` / `*_figures` functions turn that
into tables and plotly figures; comparisons and figures come from the stage modules themselves
(bench_compare, bench_figures, evals), this module only arranges them. `render(run_dir)` executes
notebooks/report.ipynb and exports it with `export_html`: code hidden, plotly.js inlined once
(renderer `notebook`), no external script or stylesheet, secrets redacted.

Every number carries its origin: measured (with run id), emulated, or reference (with source).
"""

from __future__ import annotations

import argparse
import html
import importlib
import importlib.util
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import pandas as pd

from . import secrets
from .runinfo import read_jsonl

REPORT_FILE = "report.html"
REPORT_NOTEBOOK = "report.ipynb"
PLAN_FILE = "plan.json"
PLAN_ERRORS_FILE = "plan_errors.json"
RUNBOOK_FILE = "runbook.json"
STAGES_FILE = "stages.jsonl"
MAX_REPORT_BYTES = 10 * 1024 * 1024
STAGES = ("deploy", "invoke", "speed", "accuracy")
STAGE_RESULT_FILES = {"deploy": "handle.json", "invoke": "invoke.json", "speed": "bench.jsonl",
                      "accuracy": "accuracy.jsonl"}
STAGE_MODULES = {"deploy": "kimi_runbooks.server", "invoke": "kimi_runbooks.probes",
                 "speed": "kimi_runbooks.bench", "accuracy": "kimi_runbooks.evals"}
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"


# --------------------------------------------------------------------------- collecting


@dataclass
class StageState:
    """What one stage did in this run; `status` is ok, failed, skipped, not run or not available."""

    name: str
    status: str
    detail: str = ""
    notebook: str | None = None
    duration_s: float | None = None


@dataclass
class RunData:
    run_dir: Path
    run_id: str
    params: dict[str, Any]
    plan: dict[str, Any] | None
    plan_errors: list[str]
    manifest: dict[str, Any] | None
    handle: dict[str, Any] | None
    invoke: list[Any] | None
    speed: pd.DataFrame | None
    accuracy: list[dict[str, Any]] | None
    stages: dict[str, StageState]
    problems: list[str] = field(default_factory=list)

    @property
    def platform(self) -> str | None:
        for source in (self.plan, self.manifest, self.handle, self.params):
            if source and source.get("platform"):
                return str(source["platform"])
        return None

    @property
    def model(self) -> str | None:
        for source in (self.plan, self.manifest, self.handle, self.params):
            if source and source.get("model"):
                return str(source["model"])
        return None

    @property
    def emulated(self) -> bool:
        flags = [(self.handle or {}).get("emulated"), (self.manifest or {}).get("emulated"),
                 self.params.get("launcher") == "emulator"]
        if self.invoke:
            flags.append(any(getattr(r, "emulated", False) for r in self.invoke))
        if self.speed is not None and "label" in self.speed.columns:
            flags.append(bool((self.speed["label"] == "emulated").any()))
        return any(bool(f) for f in flags)

    @property
    def run_label(self) -> str:
        return f"emulated (run {self.run_id})" if self.emulated else f"measured (run {self.run_id})"


def _read_json(path: Path, problems: list[str]) -> Any:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name} could not be read ({exc}); its section is shown as not run")
        return None


def stage_availability(stage: str, notebooks_dir: Path = NOTEBOOKS_DIR) -> str | None:
    """None when the stage's module and notebook exist, else why the stage cannot run yet."""
    from .runbook import STAGE_NOTEBOOKS  # the runbook owns the stage -> notebook table

    missing = []
    module = STAGE_MODULES.get(stage)
    if module and importlib.util.find_spec(module) is None:
        missing.append(f"module {module}")
    notebook = STAGE_NOTEBOOKS.get(stage)
    if notebook and not (notebooks_dir / notebook).exists():
        missing.append(f"notebook notebooks/{notebook}")
    return ("not available in this checkout: " + ", ".join(missing) + " missing") if missing else None


def _stage_rows(folder: Path) -> dict[str, dict[str, Any]]:
    latest: dict[str, dict[str, Any]] = {}
    for row in read_jsonl(folder / STAGES_FILE):
        if row.get("stage"):
            latest[row["stage"]] = row
    return latest


def _stage_states(folder: Path, params: dict[str, Any]) -> dict[str, StageState]:
    recorded = _stage_rows(folder)
    requested = params.get("stages")
    states = {}
    for stage in STAGES:
        row = recorded.get(stage)
        if row:
            states[stage] = StageState(stage, row.get("status", "unknown"), row.get("detail") or "",
                                       row.get("notebook"), row.get("duration_s"))
        elif (folder / STAGE_RESULT_FILES[stage]).exists():
            states[stage] = StageState(stage, "ok", "results found in the run folder")
        elif requested is not None and stage not in requested:
            states[stage] = StageState(stage, "not run", "not requested (stages parameter)")
        else:
            states[stage] = StageState(stage, "not run", stage_availability(stage) or
                                       f"no {STAGE_RESULT_FILES[stage]} in the run folder")
    return states


def _load_invoke(folder: Path, problems: list[str]) -> list[Any] | None:
    if not (folder / STAGE_RESULT_FILES["invoke"]).exists():
        return None
    from . import probes

    try:
        return probes.load(folder)
    except Exception as exc:  # a torn or older file must not hide the rest of the report
        problems.append(f"invoke.json could not be read ({type(exc).__name__}: {exc})")
        return None


def _load_speed(folder: Path, devices: int | None, problems: list[str]) -> pd.DataFrame | None:
    if not (folder / STAGE_RESULT_FILES["speed"]).exists():
        return None
    from .bench_results import load_results

    try:
        return load_results(folder, devices=devices)
    except Exception as exc:
        problems.append(f"bench.jsonl could not be read ({type(exc).__name__}: {exc})")
        return None


def _devices(plan: dict[str, Any] | None) -> int | None:
    if (plan or {}).get("devices_used"):
        return int(plan["devices_used"])
    config = (plan or {}).get("config") or {}
    tp = config.get("tp") or (plan or {}).get("tp")
    if not tp:
        argv = (plan or {}).get("argv") or []
        if "--tp" in argv:
            tp = argv[argv.index("--tp") + 1]
    try:
        return int(tp) * int(config.get("pp") or 1) if tp else None
    except (TypeError, ValueError):
        return None


def collect(run_dir: str | Path) -> RunData:
    """Everything the stages left in `run_dir`; missing pieces stay None (shown as not run)."""
    folder = Path(run_dir)
    if not folder.is_dir():
        raise FileNotFoundError(f"run folder {folder} does not exist. Fix: pass the folder a runbook "
                                "or a stage notebook wrote (outputs/<run id>/).")
    problems: list[str] = []
    params = _read_json(folder / RUNBOOK_FILE, problems) or {}
    manifest = _read_json(folder / "manifest.json", problems)
    plan = _read_json(folder / PLAN_FILE, problems) or (manifest or {}).get("plan")
    plan_errors = _read_json(folder / PLAN_ERRORS_FILE, problems) or []
    handle = _read_json(folder / "handle.json", problems)
    accuracy_rows = read_jsonl(folder / STAGE_RESULT_FILES["accuracy"]) if (
        folder / STAGE_RESULT_FILES["accuracy"]).exists() else None
    run_id = str(params.get("run_id") or (manifest or {}).get("run_id") or (handle or {}).get("run_id")
                 or folder.name)
    return RunData(
        run_dir=folder, run_id=run_id, params=params, plan=plan,
        plan_errors=[e if isinstance(e, str) else str(e.get("text", e)) for e in plan_errors],
        manifest=manifest, handle=handle, invoke=_load_invoke(folder, problems),
        speed=_load_speed(folder, _devices(plan), problems), accuracy=accuracy_rows,
        stages=_stage_states(folder, params), problems=problems,
    )


# --------------------------------------------------------------------------- verdict and warnings


@dataclass(frozen=True)
class Verdict:
    level: str  # PASS, WARN, FAIL, INCOMPLETE, INVALID
    headline: str
    reasons: list[str]


@dataclass(frozen=True)
class Warning_:
    kind: str  # security, plan, skipped, regression, emulated, report
    text: str


def speed_comparison(data: RunData, tolerance: float = 0.1) -> pd.DataFrame:
    """bench_compare.compare of this run against the platform's published references."""
    if data.speed is None or data.speed.empty or not data.platform:
        return pd.DataFrame()
    from .bench_compare import compare, reference_frame

    refs = reference_frame(data.platform)
    return compare(data.speed, refs, tolerance=tolerance)


def _evals_compare() -> Any | None:
    """The accuracy stage's comparison module (kimi_runbooks.evals.compare), when it exists."""
    if importlib.util.find_spec("kimi_runbooks.evals") is None:
        return None
    try:
        return importlib.import_module("kimi_runbooks.evals.compare")
    except ImportError:
        return None


def accuracy_comparison(data: RunData) -> pd.DataFrame | None:
    """evals.compare.compare of this run's rows with the published accuracy, or None."""
    module = _evals_compare()
    if not data.accuracy or module is None:
        return None
    return module.compare(data.accuracy)


def accuracy_figures(data: RunData) -> list[Any]:
    module = _evals_compare()
    table = accuracy_comparison(data)
    if module is None or table is None or table.empty or not hasattr(module, "chart"):
        return []
    return [module.chart(table)]


def _is_loopback(host: str | None) -> bool:
    return host in (None, "127.0.0.1", "localhost", "::1")


def warnings(data: RunData) -> list[Warning_]:
    out: list[Warning_] = []
    config = (data.plan or {}).get("config") or {}
    if data.emulated:
        out.append(Warning_("emulated", "EMULATED run: every timing comes from the project's emulator "
                            "(a latency model), not from hardware; it rehearses the runbook only."))
    if not _is_loopback(config.get("host")) and not config.get("api_key_env"):
        out.append(Warning_("security", f"the server binds {config.get('host')} with no API key: "
                            "anyone on the network can use it. Fix: set api_key_env, or host=127.0.0.1."))
    elif not _is_loopback(config.get("host")):
        out.append(Warning_("security", f"the server binds {config.get('host')} (reachable from the "
                            "network, key required)."))
    for text in (data.plan or {}).get("warnings") or []:
        out.append(Warning_("plan", str(text)))
    for text in (data.manifest or {}).get("warnings") or []:
        out.append(Warning_("deploy", str(text)))
    if data.speed is not None and "status" in data.speed.columns:
        for _, row in data.speed[data.speed["status"] != "ok"].iterrows():
            out.append(Warning_("skipped", f"speed scenario {row['scenario']}: {row['status']}"
                                + (f" ({str(row.get('error'))[:300]})" if row.get("error") else "")))
    for r in data.invoke or []:
        if r.status == "skip":
            out.append(Warning_("skipped", f"invoke check {r.name} skipped: {r.reason}"))
    comparison = speed_comparison(data)
    if not comparison.empty:
        for _, row in comparison[comparison["regression"]].iterrows():
            origin = "emulated" if data.emulated else "measured"
            out.append(Warning_("regression", f"{row['scenario']} {row['metric']}: {origin} {row['run_value']:.4g} "
                                f"vs reference {row['reference_value']:.4g} (ratio {row['ratio']:.2f}, "
                                f"{row['better']} is better; {row['reference_source']})"))
    for text in data.problems:
        out.append(Warning_("report", text))
    return out


def verdict(data: RunData) -> Verdict:
    """INVALID (plan refused), FAIL (a stage or check failed), INCOMPLETE (a requested stage did
    not run), WARN (regressions vs references on a measured run), else PASS."""
    if data.plan_errors:
        return Verdict("INVALID", "the plan failed validation; no server was started", list(data.plan_errors))
    failed = [f"stage {s.name} failed: {s.detail}" for s in data.stages.values() if s.status == "failed"]
    failed += [f"invoke check {r.name} failed: {r.reason}" for r in data.invoke or [] if r.status == "fail"]
    if data.speed is not None and "status" in data.speed.columns:
        failed += [f"speed scenario {s} failed" for s in data.speed.loc[data.speed["status"] == "failed", "scenario"]]
    failed += [f"accuracy suite {r.get('suite')} errored: {str(r.get('detail') or '')[:200]}"
               for r in data.accuracy or [] if r.get("status") == "error"]
    if failed:
        return Verdict("FAIL", f"{len(failed)} failure(s)", failed)
    missing = [f"stage {s.name}: {s.status} ({s.detail})" for s in data.stages.values()
               if s.status != "ok" and s.detail != "not requested (stages parameter)"]
    missing += [f"accuracy suite {r.get('suite')} skipped: {str(r.get('detail') or '')[:200]}"
                for r in data.accuracy or [] if r.get("status") == "skipped"]
    suffix = " (EMULATED: a rehearsal, not a hardware result)" if data.emulated else ""
    if missing:
        return Verdict("INCOMPLETE", "not every requested stage ran" + suffix, missing)
    regressions = [w.text for w in warnings(data) if w.kind == "regression"]
    if regressions and not data.emulated:
        return Verdict("WARN", f"{len(regressions)} regression(s) against published references", regressions)
    return Verdict("PASS", "every requested stage ran and every check passed" + suffix, [])


# --------------------------------------------------------------------------- tables


def plan_table(data: RunData) -> pd.DataFrame:
    config = (data.plan or {}).get("config") or {}
    rows = [(k, v) for k, v in config.items() if v not in (None, [], {}, "")]
    df = pd.DataFrame(rows, columns=["knob", "value"])
    df["source"] = "plan (params recipe + runbook parameters)"
    return df


def memory_table(data: RunData) -> pd.DataFrame:
    memory = dict((data.plan or {}).get("memory") or {})
    notes = memory.pop("notes", [])
    rows = [(k, v, f"estimate (planner, {memory.get('source', 'estimate')})") for k, v in memory.items()
            if k != "source"]
    live = (data.manifest or {}).get("max_total_num_tokens") or (data.handle or {}).get("max_total_num_tokens")
    if live:
        rows.append(("max_total_num_tokens (live /server_info)", live,
                     "emulated" if data.emulated else data.run_label))
    rows += [("note", n, "planner") for n in notes]
    return pd.DataFrame(rows, columns=["item", "value", "source"])


MANIFEST_KEYS = ("run_id", "launcher", "emulated", "base_url", "sglang_version", "max_total_num_tokens",
                 "project_commit", "python", "host_os", "started_at", "ready_at")


def manifest_table(data: RunData) -> pd.DataFrame:
    m = data.manifest or {}
    rows = [(k, m.get(k)) for k in MANIFEST_KEYS if k in m]
    packages = m.get("packages") or {}
    rows += [(f"package {k}", v) for k, v in packages.items() if v]
    hw = m.get("hardware")
    rows.append(("hardware", hw if isinstance(hw, str) else json.dumps(hw)[:500]))
    return pd.DataFrame(rows, columns=["item", "value"])


def invoke_table(data: RunData) -> pd.DataFrame | None:
    if data.invoke is None:
        return None
    from .probes import summary_table

    return summary_table(data.invoke)


def invoke_counts(data: RunData) -> dict[str, int] | None:
    if data.invoke is None:
        return None
    from .probes import counts

    return counts(data.invoke)


SPEED_COLUMNS = ("scenario", "status", "label", "max_concurrency", "completed", "output_throughput",
                 "output_tok_s_per_gpu", "tok_s_per_user", "median_ttft_ms", "p99_ttft_ms",
                 "median_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms", "error")


def speed_table(data: RunData) -> pd.DataFrame | None:
    if data.speed is None:
        return None
    df = data.speed[[c for c in SPEED_COLUMNS if c in data.speed.columns]].copy()
    if "label" in df.columns:
        df["label"] = [f"{lab} (run {data.run_id})" for lab in df["label"]]
    return df.rename(columns={"label": "source"})


def latency_table(data: RunData) -> pd.DataFrame | None:
    if data.speed is None or data.speed.empty:
        return None
    from .bench_results import latency_table as lt

    ok = data.speed[data.speed["status"] == "ok"] if "status" in data.speed.columns else data.speed
    return lt(ok) if not ok.empty else None


def reference_table(data: RunData) -> pd.DataFrame:
    """The platform's published speed rows (labelled reference + source)."""
    if not data.platform:
        return pd.DataFrame()
    from .bench_compare import reference_frame

    refs = reference_frame(data.platform)
    cols = [c for c in ("scenario", "max_concurrency", "output_throughput", "output_tok_s_per_gpu",
                        "tok_s_per_user", "median_ttft_ms", "median_tpot_ms", "source") if c in refs.columns]
    return refs[cols] if not refs.empty else refs


def speed_figures(data: RunData) -> list[Any]:
    """The speed stage's own figures (bench_figures), this run beside the platform's references."""
    if data.speed is None or data.speed.empty:
        return []
    from .bench_compare import reference_frame
    from .bench_figures import latency_vs_concurrency, pareto, throughput_vs_concurrency

    run = data.speed.copy()
    run["platform"] = data.platform
    refs = reference_frame(data.platform) if data.platform else None
    return [pareto(run, refs), throughput_vs_concurrency(run, refs), latency_vs_concurrency(run, refs)]


def accuracy_table(data: RunData) -> pd.DataFrame | None:
    if data.accuracy is None:
        return None
    df = pd.DataFrame.from_records(data.accuracy)
    if "source" not in df.columns and "label" not in df.columns:
        df["source"] = "emulated" if data.emulated else f"measured (run {data.run_id})"
    return df


def stages_table(data: RunData) -> pd.DataFrame:
    return pd.DataFrame([(s.name, s.status, s.detail, s.duration_s) for s in data.stages.values()],
                        columns=["stage", "status", "detail", "duration_s"])


def summary_text(data: RunData) -> str:
    """Plain-text verdict block (the nbval-checked output of runbooks and the report)."""
    v = verdict(data)
    lines = [f"verdict: {v.level} - {v.headline}"]
    lines += [f"  - {r}" for r in v.reasons]
    lines.append(f"platform: {data.platform}  model: {data.model}  emulated: {data.emulated}")
    lines += [f"stage {s.name}: {s.status}" for s in data.stages.values()]
    c = invoke_counts(data)
    if c is not None:
        lines.append(f"invoke: {c['pass']} passed, {c['fail']} failed, {c['skip']} skipped")
    return "\n".join(lines)


# --------------------------------------------------------------------------- notebook display


def setup_notebook() -> None:
    """Figures through plotly's `notebook` renderer: plotly.js inlined once, works offline."""
    import plotly.io as pio

    pio.renderers.default = "notebook"


def _html(text: str) -> Any:
    from IPython.display import HTML

    return HTML(text)


def _show(obj: Any) -> None:
    from IPython.display import display

    display(obj)


def _frame_html(df: pd.DataFrame | None, empty: str) -> str:
    if df is None or df.empty:
        return f"<p><em>{html.escape(empty)}</em></p>"
    return df.to_html(index=not isinstance(df.index, pd.RangeIndex), na_rep="-", float_format=_fmt_num,
                      escape=True, border=0, classes="kr-table")


def _fmt_num(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:,.4g}"


_COLORS = {"PASS": "#1b7a1b", "WARN": "#b36b00", "FAIL": "#b00020", "INCOMPLETE": "#6a4c93",
           "INVALID": "#b00020"}


def show_banner(data: RunData) -> None:
    if data.emulated:
        _show(_html('<div style="background:#ffe08a;border:2px solid #b36b00;padding:10px;font-weight:bold">'
                    "EMULATED: this run used the project's SGLang emulator (CPU, no model). Every speed and "
                    "latency figure is the emulator's latency model, not a hardware measurement.</div>"))


def show_verdict(data: RunData) -> None:
    v = verdict(data)
    items = "".join(f"<li>{html.escape(r)}</li>" for r in v.reasons)
    _show(_html(f'<h2 style="color:{_COLORS.get(v.level, "#000")}">Verdict: {v.level}</h2>'
                f"<p>{html.escape(v.headline)}</p>" + (f"<ul>{items}</ul>" if items else "")))
    print(summary_text(data))


def show_plan(data: RunData) -> None:
    if not data.plan:
        _show(_html("<p><em>No plan recorded in this run folder (plan.json / manifest plan).</em></p>"))
        return
    title = f"{data.platform} / {data.model}"
    _show(_html(f"<h3>{html.escape(title)}</h3><p>Launch command (secrets redacted):</p>"
                f"<pre>{html.escape(str(data.plan.get('command')))}</pre>"
                + (f"<p>docker form:</p><pre>{html.escape(str(data.plan['docker']))}</pre>"
                   if data.plan.get("docker") else "")))
    _show(_html("<h4>Knobs</h4>" + _frame_html(plan_table(data), "no knobs recorded")))
    _show(_html("<h4>Memory and KV cache per device</h4>" + _frame_html(memory_table(data), "no memory plan")))


def show_manifest(data: RunData) -> None:
    if data.manifest is None:
        _show(_html("<p><em>No manifest.json: the deploy stage did not run (or did not finish).</em></p>"))
        return
    _show(_html(_frame_html(manifest_table(data), "empty manifest")))


def _not_run(data: RunData, stage: str) -> str:
    s = data.stages[stage]
    return f"The {stage} stage is {s.status}: {s.detail}"


def show_invoke(data: RunData) -> None:
    table = invoke_table(data)
    if table is None:
        _show(_html(f"<p><em>{html.escape(_not_run(data, 'invoke'))}</em></p>"))
        return
    c = invoke_counts(data) or {}
    print(f"invoke checks: {c.get('pass', 0)} passed, {c.get('fail', 0)} failed, {c.get('skip', 0)} skipped")
    _show(_html(_frame_html(table, "no checks")))


def show_speed(data: RunData) -> None:
    table = speed_table(data)
    if table is None:
        _show(_html(f"<p><em>{html.escape(_not_run(data, 'speed'))}</em></p>"))
        return
    _show(_html("<h4>Scenarios (this run)</h4>" + _frame_html(table, "no scenarios")))
    _show(_html("<h4>Latency, median and p99 (this run)</h4>" + _frame_html(latency_table(data), "no finished scenario")))
    comparison = speed_comparison(data)
    if comparison.empty:
        _show(_html("<p><em>No published reference covers these scenarios on this platform; the "
                    "references are listed below for context only.</em></p>"))
    else:
        from .bench_compare import compare_wide

        _show(_html("<h4>Against published references (ratio = run / reference)</h4>"
                    + _frame_html(compare_wide(comparison), "")))
    _show(_html("<h4>Published references for this platform</h4>"
                + _frame_html(reference_table(data), "no published speed reference for this platform")))
    for fig in speed_figures(data):
        fig.show()


def show_accuracy(data: RunData) -> None:
    table = accuracy_table(data)
    if table is None:
        _show(_html(f"<p><em>{html.escape(_not_run(data, 'accuracy'))}</em></p>"))
        return
    _show(_html("<h4>Results (this run)</h4>" + _frame_html(table, "no rows")))
    comparison = accuracy_comparison(data)
    if comparison is not None:
        _show(_html("<h4>Against published references</h4>" + _frame_html(comparison, "no reference rows")))
    for fig in accuracy_figures(data):
        fig.show()


def show_warnings(data: RunData) -> None:
    items = warnings(data)
    if not items:
        _show(_html("<p>No warnings.</p>"))
        return
    rows = "".join(f"<tr><td>{html.escape(w.kind)}</td><td>{html.escape(w.text)}</td></tr>" for w in items)
    _show(_html(f'<table class="kr-table"><tr><th>kind</th><th>warning</th></tr>{rows}</table>'))


def show_stages(data: RunData) -> None:
    _show(_html(_frame_html(stages_table(data), "no stages")))


# --------------------------------------------------------------------------- HTML export

_TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
"""
"""nbconvert's lab template without the MathJax and require.js CDN scripts (the report has no maths)."""

_EXTERNAL = re.compile(r"""<script\b[^>]*\bsrc\s*=\s*["']?(?!data:)[^"'\s>]+|"""
                       r"""<link\b[^>]*\brel\s*=\s*["']?stylesheet[^>]*>|@import\s+url\(\s*["']?https?:""",
                       re.IGNORECASE)


_PLOTLY_MATHJAX = re.compile(r"""<script src=["']https://cdnjs\.cloudflare\.com/ajax/libs/mathjax/[^"']+["']></script>""")
"""plotly's `notebook` renderer puts a MathJax CDN loader before every figure (hard-coded
include_mathjax="cdn"); it only typesets LaTeX labels, which the report has none of, so it is dropped."""


def strip_plotly_mathjax(text: str) -> str:
    return _PLOTLY_MATHJAX.sub("", text)


def external_references(text: str) -> list[str]:
    """Every external script, stylesheet link or CSS @import in `text` (should be none)."""
    return [m.group(0)[:200] for m in _EXTERNAL.finditer(text)]


def export_html(notebook: str | Path, html_path: str | Path, *, secret_envs: Iterable[str | None] = (),
                title: str | None = None) -> Path:
    """Executed notebook -> self-contained HTML without code cells; refuses external references."""
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    nb = nbformat.read(str(notebook), as_version=4)
    if title:
        nb.metadata["title"] = title
    exporter = HTMLExporter(extra_loaders=[jinja2.DictLoader({"kimi_report.html.j2": _TEMPLATE})],
                            template_file="kimi_report.html.j2", exclude_input=True,
                            exclude_input_prompt=True, exclude_output_prompt=True, embed_images=True)
    body, _ = exporter.from_notebook_node(nb)
    body = secrets.redact(strip_plotly_mathjax(body), list(secret_envs))
    found = external_references(body)
    if found:
        raise RuntimeError(f"the report would load external resources: {found[:3]}. Fix: use plotly "
                           "renderer 'notebook' (report.setup_notebook()) and no CDN-linked outputs.")
    out = Path(html_path)
    out.write_text(body, encoding="utf-8")
    size = out.stat().st_size
    if size > MAX_REPORT_BYTES:
        raise RuntimeError(f"{out} is {size / 1e6:.1f} MB, over the {MAX_REPORT_BYTES / 1e6:.0f} MB limit. "
                           "Fix: fewer figures or smaller tables in the report notebook.")
    return out


def redact_notebook(path: str | Path, secret_envs: Iterable[str | None] = ()) -> None:
    """Rewrite an executed notebook with every secret value replaced (outputs, parameters, logs)."""
    import nbformat

    p = Path(path)
    nb = nbformat.read(str(p), as_version=4)
    clean = secrets.redact(json.loads(nbformat.writes(nb)), list(secret_envs))
    nbformat.write(nbformat.from_dict(clean), str(p))


def render(run_dir: str | Path, *, notebook: str | Path | None = None, secret_env: str | None = None,
           kernel_name: str | None = None, progress: bool = False) -> Path:
    """Execute the report notebook for `run_dir` (copy kept in run_dir/notebooks/) -> report.html."""
    import papermill as pm

    folder = Path(run_dir).resolve()
    if not folder.is_dir():
        raise FileNotFoundError(f"run folder {folder} does not exist. Fix: pass an existing run folder.")
    source = Path(notebook) if notebook else NOTEBOOKS_DIR / REPORT_NOTEBOOK
    executed = folder / "notebooks" / REPORT_NOTEBOOK
    executed.parent.mkdir(parents=True, exist_ok=True)
    pm.execute_notebook(str(source), str(executed), parameters={"run_dir": str(folder)},
                        kernel_name=kernel_name, cwd=str(folder), progress_bar=progress)
    redact_notebook(executed, [secret_env])
    return export_html(executed, folder / REPORT_FILE, secret_envs=[secret_env],
                       title=f"Kimi runbook report {folder.name}")


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    """`kimi-runbooks report RUN_DIR [RUN_DIR ...] [-o OUT]`: one folder -> its report.html;
    several -> one cross-run comparison (compare_runs)."""
    parser = argparse.ArgumentParser(prog="kimi-runbooks report", description=main.__doc__)
    parser.add_argument("run_dirs", nargs="+", help="run folders (outputs/<run id>/)")
    parser.add_argument("-o", "--output", help="HTML to write (default: RUN_DIR/report.html, or "
                        "outputs/compare-<stamp>.html for several folders)")
    parser.add_argument("--api-key-env", help="NAME of an env var whose value must be redacted")
    args = parser.parse_args(argv)
    dirs = [Path(d) for d in args.run_dirs]
    missing = [str(d) for d in dirs if not d.is_dir()]
    if missing:
        print(f"error: not a run folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    if len(dirs) > 1:
        from .compare_runs import build

        out = build(dirs, args.output)
    else:
        out = render(dirs[0], secret_env=args.api_key_env)
        if args.output:
            Path(args.output).write_bytes(out.read_bytes())
            out = Path(args.output)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
