"""Every published speed result in params/references as (plan, scenario, metric, value).

* `kind: speed` (bench_serving): one row per result and metric (median TPOT, output
  throughput, median TTFT). Lengths are the MEASURED means (total_input_tokens / completed,
  total_output_tokens / completed), not the nominal ones: the cookbook runs used
  bench_serving's default --random-range-ratio, so a "1K" prompt averages ~610 tokens.
* `kind: matrix` (llm-inference-bench): decode cells are steady decode at `concurrency`
  (median ITL as TPOT, sustained tok/s as output throughput); prefill cells give TTFT at
  concurrency 1. Queued and over-capacity cells are not speed results.
* `kind: table` (a results table a page published, e.g. a vendor blog, or a repository's result
  files): one row per run with its lengths, concurrency, prompt count, range ratio or
  fixed_lengths (1.0 / true: every request exactly those lengths, which keeps a closed loop in
  lock-step waves, queueing.synchronized_waves), the medians, and its own `launch` where it
  differs from the reference's.
* `compare_only: true` (any kind): a published figure a prediction is compared with and never
  fitted (the only Kimi-K3 figure): left out here, see beside_measured.predicted_beside_references.
* every row carries its software stack (stack.py: the reference's `stack:` block, a row's
  `launch.stack`, else read from its launch command and image; a target from its deployment's
  flags), its reference's `published:` date and `held_out: true` (never fitted).
* `kind: targets` (Ascend): SLO ceilings, not measurements. They are listed for the record;
  those at concurrency >= TIGHT_TARGET_CONCURRENCY (where the published configuration was
  sized to sit at the ceiling) also enter the fit at half weight.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ._deps import Catalog, PlanConfig, plan
from .predict import Scenario
from .stack import Stack, plan_stack, reference_stack

METRICS = ("median_tpot_ms", "output_throughput", "median_ttft_ms")
TIGHT_TARGET_CONCURRENCY = 16
TARGET_WEIGHT = 0.5
IMAGE_PIXELS_PER_TOKEN_SIDE = 28  # MoonViT patch 14 with 2x2 merge: one token per 28x28 pixels


@dataclass(frozen=True)
class Observation:
    reference_id: str
    kind: str
    platform: str
    family: str
    scenario_id: str
    config: dict[str, Any]
    scenario: Scenario
    metric: str
    published: float
    fit: bool = True
    weight: float = 1.0
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    document: str = ""
    """The public document the row was published in (source_document): what validation leaves out."""
    stack: Stack = field(default_factory=Stack)
    """The software stack the row ran on (stack.py: the reference's `stack:` block, else its command)."""
    published_on: str = ""
    """The reference's `published:` date (YYYY-MM-DD) where its source gives one: the time split."""
    held_out: bool = False
    """The reference carries `held_out: true`: never fitted, reported apart (validation.py)."""


URL = re.compile(r"https?://[^\s,;)'\"]+")


def source_document(ref: Any) -> str:
    """The address of the page a reference was transcribed from (without #fragment), else its id.

    Two references transcribed from sections of one page (the Kimi-K2.6 cookbook's H200 and
    MI350X speed benchmarks) are one document: leaving the document out leaves both out."""
    found = URL.search(str(getattr(ref, "source", "") or ""))
    return found.group(0).split("#")[0].rstrip("/.") if found else str(ref.id)


def _launch_config(platform: str, model: str, launch: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "tp",
        "dp",
        "ep",
        "enable_dp_attention",
        "kv_cache_dtype",
        "mem_fraction_static",
        "context_length",
        "speculative",
    )
    config = {"platform": platform, "model": model}
    config.update({k: launch[k] for k in keys if launch.get(k) is not None})
    PlanConfig.model_validate(config)
    return config


def _speed(ref: Any, family: str, fmt: str | None = None) -> list[Observation]:
    out = []
    for result in ref.results:
        row_launch = {"launch_command": result.get("launch_command"), **(result.get("launch") or {})}
        stack = reference_stack(ref, fmt, row_launch) if result.get("launch_command") else None
        m = result["metrics"]
        completed = int(m["completed"])
        scenario = Scenario(
            input_len=max(round(m["total_input_tokens"] / completed), 1),
            output_len=max(round(m["total_output_tokens"] / completed), 1),
            concurrency=int(m["max_concurrency"]),
            num_prompts=completed,
        )
        config = _launch_config(ref.platform, ref.model, result.get("launch") or ref.launch)
        for metric in METRICS:
            if m.get(metric) is not None:
                seen = Observation(
                    ref.id,
                    "speed",
                    ref.platform,
                    family,
                    result["scenario"],
                    config,
                    scenario,
                    metric,
                    float(m[metric]),
                )
                out.append(replace(seen, stack=stack) if stack is not None else seen)
    return out


def _table(ref: Any, family: str, fmt: str | None = None) -> list[Observation]:
    out = []
    for row in ref.rows:
        config = _launch_config(ref.platform, ref.model, {**ref.launch, **(row.get("launch") or {})})
        scenario = Scenario(
            input_len=int(row["input_len"]),
            output_len=int(row["output_len"]),
            concurrency=int(row["concurrency"]),
            num_prompts=int(row["num_prompts"]),
            fixed_lengths=bool(row.get("fixed_lengths")) or float(row.get("range_ratio") or 0.0) == 1.0,
        )
        stack = reference_stack(ref, fmt, row.get("launch")) if row.get("launch") else None
        for metric in METRICS:
            value = row["metrics"].get(metric)
            if value is not None:
                seen = Observation(
                    ref.id, "table", ref.platform, family, row["scenario"], config, scenario, metric, float(value)
                )
                out.append(replace(seen, stack=stack) if stack is not None else seen)
    return out


def _matrix(ref: Any, family: str) -> list[Observation]:
    out = []
    config = _launch_config(ref.platform, ref.model, ref.launch)
    max_out = int(getattr(ref, "max_output_tokens", 4096))
    for row in ref.rows:
        if row.get("status") != "valid":
            continue
        ctx, conc = int(row["context_tokens"]), int(row["concurrency"])
        label = f"{row['phase']}-ctx{ctx}-c{conc}"
        # one matrix cell's observations differ only in scenario, metric and value
        seen = partial(Observation, ref.id, "matrix", ref.platform, family, label, config)
        if row["phase"] == "prefill":
            prefill = Scenario(input_len=ctx, output_len=1, concurrency=1, num_prompts=1)
            out.append(seen(prefill, "median_ttft_ms", float(row["median_ttft_ms"])))
            continue
        sc = Scenario(input_len=ctx, output_len=max_out, concurrency=conc, steady_decode=True)
        out.append(seen(sc, "median_tpot_ms", float(row["median_itl_ms"]), note="median ITL of a steady decode test"))
        out.append(
            seen(
                sc,
                "output_throughput",
                float(row["total_tok_s"]),
                fit=False,
                note="sustained decode tok/s (redundant with ITL in the fit)",
            )
        )
    return out


def _image_tokens(resolution: str) -> int:
    w, h = (int(v) for v in resolution.lower().split("x"))
    side = IMAGE_PIXELS_PER_TOKEN_SIDE
    return math.ceil(w / side) * math.ceil(h / side)


def deployment_scenario(catalog: Catalog, scenario_id: str) -> Scenario:
    """A params/scenarios entry as a Scenario (shared-prefix and image sets included)."""
    sc = catalog.scenario(scenario_id)
    extra = {k: str(v) for k, v in sc.extra_args.items()}
    prefix = 0.0
    if sc.dataset == "generated-shared-prefix":
        system, question = int(extra["--gsp-system-prompt-len"]), int(extra["--gsp-question-len"])
        input_len, output_len = system + question, int(extra["--gsp-output-len"])
        prefix = system / input_len
    elif sc.dataset == "image":
        count = int(extra.get("--image-count", "1"))
        input_len = int(sc.input_len or 0) + count * _image_tokens(extra["--image-resolution"])
        output_len = int(sc.output_len or 1)
    else:
        input_len, output_len = int(sc.input_len or 1), int(sc.output_len or 1)
    return Scenario(
        input_len=input_len,
        output_len=output_len,
        concurrency=sc.max_concurrency or 1,
        prefix_hit=prefix,
        num_prompts=sc.num_prompts,
    )


def _targets(ref: Any, family: str, catalog: Catalog) -> list[Observation]:
    out = []
    for row in ref.rows:
        dep = catalog.deployment(row["deployment"])
        sc = deployment_scenario(catalog, dep.benchmark or "")
        config = {"platform": ref.platform, "deployment": dep.id}
        launch = plan(config, catalog)  # the published deployment's own flags are its stack
        stack = plan_stack(launch)
        tight = (sc.concurrency or 1) >= TIGHT_TARGET_CONCURRENCY
        for metric, key in (("median_tpot_ms", "tpot_ms"), ("median_ttft_ms", "ttft_ms")):
            if row.get(key) is None:
                continue
            out.append(
                Observation(
                    ref.id,
                    "targets",
                    ref.platform,
                    family,
                    dep.id,
                    config,
                    sc,
                    metric,
                    float(row[key]),
                    fit=tight and metric == "median_tpot_ms",
                    weight=TARGET_WEIGHT,
                    note="SLO ceiling, not a measurement",
                    stack=stack,
                )
            )
    return out


def observations(catalog: Catalog) -> list[Observation]:
    """Every published speed result (and target) in params/references, in file order."""
    out: list[Observation] = []
    for ref in catalog.references.values():
        if ref.kind == "accuracy" or getattr(ref, "compare_only", False):
            continue  # not speed; or compared with predictions (beside_measured.predicted_beside_references)
        family = catalog.platform(ref.platform).hardware.perf_family
        fmt = catalog.models[ref.model].weight_format if ref.model in catalog.models else None
        rows: list[Observation] = []
        if ref.kind == "speed":
            rows = _speed(ref, family, fmt)
        elif ref.kind == "matrix":
            rows = _matrix(ref, family)
        elif ref.kind == "table":
            rows = _table(ref, family, fmt)
        elif ref.kind == "targets":
            rows = _targets(ref, family, catalog)
        stack = reference_stack(ref, fmt)
        published = str(getattr(ref, "published", "") or "")
        held = bool(getattr(ref, "held_out", False))
        for o in rows:
            row_stack = o.stack if o.stack != Stack() else stack
            out.append(
                replace(
                    o,
                    document=source_document(ref),
                    stack=row_stack,
                    published_on=published,
                    held_out=held,
                    fit=o.fit and not held,
                )
            )
    return out
