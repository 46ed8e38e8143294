"""sgl-eval driver: `sgl-eval run <benchmark>` in its own env, metrics.json parsed into rows.

sgl-eval pins openai<3 and pandas<3, so it runs from the `sgl-eval` tool env
(``bash scripts/setup_tool_env.sh sgl-eval``). AIME 2025's 30 problems ship in the wheel; gsm8k,
gpqa and mmmu_pro download their data at run time unless ``from_dataset`` points at a staged
NeMo-Skills-shaped JSONL ({problem, expected_answer}).

Published settings (params/references, suite aime25) are the defaults; ``smoke`` shrinks a run.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from ..rundir import RunFolder
from ..tools.envs import SGL_EVAL_KEY_ENV
from .common import StageMissing, SuiteFailed, ToolJob, ToolRun, fail_message, given_flags, run_tool
from .references import reference_entry

#: sgl-eval benchmark -> suite id used in accuracy.jsonl and the reference suite it compares to.
BENCHMARKS: dict[str, dict[str, str]] = {
    "aime25": {"suite": "aime25", "reference_suite": "aime25"},
    "gsm8k": {"suite": "sgl-eval:gsm8k", "reference_suite": "gsm8k"},
    "gpqa": {"suite": "sgl-eval:gpqa", "reference_suite": "gpqa-diamond"},
    "mmmu_pro": {"suite": "sgl-eval:mmmu_pro", "reference_suite": "mmmu-pro"},
}

#: Benchmarks whose data sgl-eval downloads at run time (aime* ship in the wheel).
DOWNLOADS = {"gsm8k", "gpqa", "mmmu_pro"}


@dataclass(frozen=True)
class SglEvalConfig:
    """The flags of one `sgl-eval run`, each named as its field (build_args); None leaves sgl-eval's own default."""

    benchmark: str = "aime25"
    n_repeats: int | None = None
    temperature: float | None = 1.0
    top_p: float | None = 0.95
    max_tokens: int | None = 131072
    prompt: str | None = None
    num_threads: int | None = None
    num_examples: int | None = None
    from_dataset: str | None = None
    seed: int | None = None
    thinking: bool | None = None

    def settings(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


def published_config(benchmark: str = "aime25") -> SglEvalConfig:
    """The published command's flags (params/references) for aime25; same sampling for the rest."""
    if benchmark not in BENCHMARKS:
        raise ValueError(f"unknown sgl-eval benchmark {benchmark!r}; supported: {', '.join(BENCHMARKS)}")
    base = SglEvalConfig(benchmark=benchmark)
    try:
        entry = reference_entry(BENCHMARKS[benchmark]["reference_suite"])
    except KeyError:
        return base
    if not str(entry.get("tool", "")).startswith("sgl-eval"):
        # published with another tool (e.g. inspect for GPQA): keep the published sampling only
        s = entry.get("settings") or {}
        return replace(
            base,
            temperature=s.get("temperature", base.temperature),
            top_p=s.get("top_p", base.top_p),
            max_tokens=s.get("max_tokens", base.max_tokens),
        )
    flags = _flags(entry["command"])
    return replace(
        base,
        n_repeats=_int(flags.get("--n-repeats")),
        temperature=_float(flags.get("--temperature"), base.temperature),
        top_p=_float(flags.get("--top-p"), base.top_p),
        max_tokens=_int(flags.get("--max-tokens")) or base.max_tokens,
        prompt=flags.get("--prompt"),
        num_threads=_int(flags.get("--num-threads")),
    )


def smoke_config(benchmark: str = "aime25", num_examples: int = 2, max_tokens: int = 512) -> SglEvalConfig:
    """Published sampling, but a couple of problems, one repeat, a small token budget."""
    return replace(
        published_config(benchmark), num_examples=num_examples, n_repeats=1, max_tokens=max_tokens, num_threads=4
    )


def _flags(command: str) -> dict[str, str]:
    words = shlex.split(command)
    return {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}


def _int(v: str | None) -> int | None:
    return int(v) if v is not None else None


def _float(v: str | None, default: float | None) -> float | None:
    return float(v) if v is not None else default


def build_args(cfg: SglEvalConfig, *, base_url: str, model: str, out_dir: Path) -> list[str]:
    """`sgl-eval run ...` arguments (without the interpreter); base_url is the OpenAI /v1 base.

    No --api-key: run() hands the key over in the environment (toolenv.SGL_EVAL_KEY_ENV)."""
    args = ["run", cfg.benchmark, "--base-url", base_url, "--model", model, "--out-dir", str(out_dir)]
    args += given_flags(cfg, skip=("benchmark", "thinking"))  # --n-repeats, --top-p, --from-dataset, ...
    if cfg.thinking is not None:
        args.append("--thinking" if cfg.thinking else "--no-thinking")
    return args


# --------------------------------------------------------------------------- parsing

_METRICS_LINE = re.compile(r"^Metrics:\s*(.+metrics\.json)\s*$", re.MULTILINE)


def find_metrics(out_dir: Path, benchmark: str, log_text: str = "") -> Path:
    """metrics.json of this run: the path sgl-eval printed, else the newest sgl_eval_<name>_* folder."""
    found = _METRICS_LINE.findall(log_text)
    if found and Path(found[-1]).is_file():
        return Path(found[-1])
    runs = sorted(out_dir.glob(f"sgl_eval_{benchmark}_*/metrics.json"), key=lambda p: p.stat().st_mtime)
    if not runs:
        raise FileNotFoundError(f"no sgl_eval_{benchmark}_*/metrics.json under {out_dir}")
    return runs[-1]


def parse_metrics(path: str | Path) -> list[dict[str, Any]]:
    """metrics.json -> metric dicts named like params/references (pass@1 -> pass_at_1_avg<R>, ...).

    n: problems x repeats for per-sample rates (pass@1, stop/truncated/error rates), problems
    for per-problem ones (pass@k, majority@k, score without repeats).
    """
    data = json.loads(Path(path).read_text())
    agg: dict[str, Any] = data.get("aggregate") or {}
    if not agg:
        raise ValueError(f"{path}: no 'aggregate' block (is this sgl-eval's metrics.json?)")
    problems = data.get("num_examples")
    repeats = data.get("n_repeats") or 1
    samples = problems * repeats if problems else None
    out: list[dict[str, Any]] = []
    for key, value in agg.items():
        if key.endswith("_sem") or key.endswith("_std") or not isinstance(value, (int, float)):
            continue
        n: int | None = samples
        if key == "pass@1":
            name = f"pass_at_1_avg{repeats}"
        elif "@" in key:
            stem, k = key.split("@", 1)
            name, n = f"{stem}_at_{k}", problems
        elif key == "score":
            name = "score"
            if repeats == 1 and "pass@1" not in agg:
                out.append({"metric": "pass_at_1_avg1", "value": float(value), "n": samples, "kind": "rate"})
        else:
            name = key
        row = {"metric": name, "value": float(value), "n": n, "kind": "rate"}
        if key == "pass@1" and isinstance(agg.get("pass@1_sem"), (int, float)):
            row["stderr"] = float(agg["pass@1_sem"])
        out.append(row)
    out += _per_repeat(Path(path).parent, problems, repeats)
    if isinstance(data.get("latency_seconds"), (int, float)):
        out.append({"metric": "latency_s", "value": float(data["latency_seconds"]), "n": None, "kind": "seconds"})
    return out


def _per_repeat(folder: Path, problems: int | None, repeats: int) -> list[dict[str, Any]]:
    """perfect_repeats (repeats scoring every problem) from output-rs*.jsonl, when they have a verdict."""
    files = sorted(folder.glob("output-rs*.jsonl"))
    if not files or not problems:
        return []
    perfect = 0
    for f in files:
        verdicts = []
        for line in f.read_text().splitlines():
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "symbolic_correct" in rec:
                verdicts.append(bool(rec["symbolic_correct"]))
            elif "is_correct" in rec:
                verdicts.append(bool(rec["is_correct"]))
        if not verdicts:
            return []
        perfect += len(verdicts) == problems and all(verdicts)
    return [{"metric": "perfect_repeats", "value": perfect, "n": len(files), "kind": "count"}]


# --------------------------------------------------------------------------- run


def run(
    cfg: SglEvalConfig, job: ToolJob, *, python_argv: list[str], env: dict[str, str] | None = None
) -> tuple[ToolRun, Path, list[dict[str, Any]]]:
    """Run sgl-eval (``python_argv`` = the env's interpreter + module args, ToolEnv.argv()) and
    parse metrics.json. The key goes by env var to that wrapper, never on the command line."""
    if cfg.from_dataset and not Path(cfg.from_dataset).is_file():
        raise StageMissing(
            f"dataset {cfg.from_dataset} for sgl-eval {cfg.benchmark} not found. Fix: stage a "
            "NeMo-Skills-shaped JSONL ({problem, expected_answer}) there, or drop the path to let "
            "sgl-eval download it."
        )
    server, out_dir = job.server, job.out_dir
    folder = job.writer()
    argv = [*python_argv, *build_args(cfg, base_url=server.base_url, model=server.model, out_dir=out_dir)]
    child_env = dict(env or {})
    if server.api_key and server.api_key != "EMPTY":  # the toolenv wrapper appends it as --api-key in the child
        child_env[SGL_EVAL_KEY_ENV] = server.api_key
    log = RunFolder.tool_log(out_dir, f"sgl-eval-{cfg.benchmark}")
    tool_run = run_tool(argv, folder, log, f"sgl-eval {cfg.benchmark}", env=child_env, timeout=job.timeout)
    if tool_run.returncode != 0:
        hint = ""
        if cfg.benchmark in DOWNLOADS and not cfg.from_dataset:
            hint = (
                f"sgl-eval downloads {cfg.benchmark} at run time; offline, stage the data as JSONL and pass "
                "it as the dataset path (from_dataset)"
            )
        raise SuiteFailed(fail_message(tool_run, f"sgl-eval run {cfg.benchmark}", hint))
    metrics_path = find_metrics(out_dir, cfg.benchmark, tool_run.log_text())
    return tool_run, metrics_path, parse_metrics(metrics_path)
