"""The `--predict` mini-language and the prediction table users read.

`in=1000,out=1000,c=1,16,64` -> three scenarios (a value list continues until the next key).
Keys: in (input tokens), out (output tokens), c (concurrency) or rate (requests/s),
prefix (prefix-cache hit rate, 0..1), accept (speculative accept length), fixed (1: every
request exactly in/out tokens, bench_serving --random-range-ratio 1.0; 0, the default: in/out
are mean lengths that vary). Lists multiply.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from .predict import Prediction, Scenario, ScenarioError

KEYS = {
    "in": "input_len",
    "out": "output_len",
    "c": "concurrency",
    "rate": "request_rate",
    "prefix": "prefix_hit",
    "accept": "accept_length",
    "fixed": "fixed_lengths",
}
INTEGER_KEYS = {"in", "out", "c"}
FLAG_KEYS = {"fixed"}
EXAMPLE = "in=1000,out=1000,c=1,16,64"


class PredictSpecError(ValueError):
    """A --predict string that cannot be read; the message names the rule and an example."""


def parse_predict_spec(text: str) -> list[Scenario]:
    values: dict[str, list[float]] = {}
    key = None
    for raw in (t.strip() for t in text.split(",")):
        if not raw:
            continue
        if "=" in raw:
            key, _, raw = (part.strip() for part in raw.partition("="))
            key = key.lower()
            if key not in KEYS:
                raise PredictSpecError(
                    f"--predict: unknown key '{key}'. Valid keys: {', '.join(KEYS)}. Example: {EXAMPLE}"
                )
            if key in values:
                raise PredictSpecError(f"--predict: key '{key}' given twice. Example: {EXAMPLE}")
            values[key] = []
        if key is None:
            raise PredictSpecError(f"--predict: '{raw}' has no key. Example: {EXAMPLE}")
        values[key].append(_number(key, raw))
    missing = [k for k in ("in", "out") if k not in values]
    if missing or ("c" in values) == ("rate" in values):
        raise PredictSpecError(
            f"--predict needs in=, out= and exactly one of c= (concurrency) or rate= (requests/s). Example: {EXAMPLE}"
        )
    keys = list(values)
    scenarios = []
    for combo in itertools.product(*(values[k] for k in keys)):
        fields: dict[str, Any] = {KEYS[k]: _typed(k, v) for k, v in zip(keys, combo)}
        try:
            scenarios.append(Scenario(**fields))
        except ScenarioError as exc:
            raise PredictSpecError(f"--predict: bad scenario: {'; '.join(exc.problems)}. Example: {EXAMPLE}") from None
    return scenarios


def _typed(key: str, value: float) -> Any:
    if key in FLAG_KEYS:
        return bool(value)
    return int(value) if key in INTEGER_KEYS else value


def _number(key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise PredictSpecError(f"--predict: {key}={raw} is not a number. Example: {EXAMPLE}") from None
    if key in INTEGER_KEYS and not value.is_integer():
        raise PredictSpecError(f"--predict: {key} must be a whole number (got {raw}). Example: {EXAMPLE}")
    if key in FLAG_KEYS and value not in (0.0, 1.0):
        raise PredictSpecError(f"--predict: {key} is 0 or 1 (got {raw}). Example: {EXAMPLE},fixed=1")
    return value


def _fmt(value: float, digits: int = 0) -> str:
    if not math.isfinite(value):
        return "-"
    return f"{value:,.{digits}f}"


def _band(p: Prediction, name: str, digits: int = 0) -> str:
    return f"{_fmt(getattr(p, name), digits)} [{_fmt(p.low[name], digits)}-{_fmt(p.high[name], digits)}]"


BAND_TEXT = {
    "measured": "a calibrated family: fitted to measured results of this family on this stack",
    "slo-targets-only": "this family is fitted only to published SLO ceilings, no measurement has validated it",
    "borrowed": "no published results of this family on this MoE path and precision",
    "unfitted-stack": (
        "UNFITTED STACK: no fitted reference ran {terms}: an expert-kernel term borrows the MoE paths of its "
        "weight format fitted to measured runs, the rest stay at their priors"
    ),
    "first-principles": (
        "FIRST-PRINCIPLES estimate: no measured result of a model with this architecture was fitted or "
        "validates it (efficiency factors borrowed from pure-MLA Kimi-K2 fits); band widened x2, a judgement"
    ),
}


NARROW_HINT = (
    "# fewer than two pages measured this family on this stack: a speed-stage run on this hardware, added with "
    "`python -m kimi_runbooks.perfmodel reference-from-run RUN_DIR --id ... --source ...`, narrows the band"
)


def format_predictions(preds: list[Prediction], source: str = "") -> str:
    """The table `kimi-runbooks plan --predict` prints (every figure labelled PREDICTED)."""
    if not preds:
        return "## predicted speed (model estimate)\n(no scenarios)\n"
    first = preds[0]
    terms = [
        f"{t} (borrows {' and '.join(first.borrowed[t])})" if t in first.borrowed else f"{t} (prior)"
        for t in first.unfitted_terms
    ]
    which = BAND_TEXT.get(first.calibration_basis, BAND_TEXT["borrowed"]).format(terms=", ".join(terms) or "-")
    stack = first.stack
    shown = ", ".join(f"{k}={v}" for k, v in stack.items() if v is not None and k != "image") if stack else ""
    accepts = dict.fromkeys((p.accept_length, p.accept_basis) for p in preds if p.accept_basis)
    lines = [
        "## predicted speed (PREDICTED by kimi_runbooks.perfmodel, not measured)",
        f"# family {first.family}, {first.devices} devices; {which}",
        f"# band basis: {first.band_basis} ([low-high] = 10th-90th percentile of the leave-one-page-out "
        "errors of published results predicted with as much behind them)",
        *([NARROW_HINT] if first.pages < 2 else []),
        f"# stack: {shown or 'read from the plan (nothing shown)'} (set the rest with --stack key=value,...)",
        *(f"# speculative accept length {length:g}: {basis}" for length, basis in accepts),
        *([f"# {first.role_note}"] if first.role_note else []),
        f"{'in':>7} {'out':>6} {'load':>9} {'TTFT ms':>24} {'TPOT ms':>22} {'out tok/s':>24} "
        f"{'tok/s/dev':>9} {'tok/s/user':>10} {'running':>7}  notes",
    ]
    for p in preds:
        load = f"c={p.concurrency}" if p.concurrency is not None else f"{p.request_rate:g}/s"
        notes = []
        if p.kv_capacity_requests < 1:
            notes.append("does not fit the KV pool")
        elif p.kv_limited and p.capacity_limit == "state-pool":
            notes.append(f"the state pool admits {p.kv_capacity_requests}: the rest queue")
        elif p.kv_limited and p.capacity_limit == "max-running-requests":
            notes.append(f"max_running_requests lets {p.kv_capacity_requests} run: the rest queue")
        elif p.kv_limited:
            notes.append(f"KV pool holds {p.kv_capacity_requests}: the rest queue")
        if p.saturated and p.kv_capacity_requests >= 1:
            notes.append("over capacity: queue grows")
        if p.prefix_hit:
            notes.append(f"prefix hit {p.prefix_hit:.0%}")
        if p.fixed_lengths and (p.concurrency or 1) > 1:
            notes.append("fixed lengths: lock-step waves")
        notes.append(f"{p.bound}-bound")
        lines.append(
            f"{p.input_len:>7} {p.output_len:>6} {load:>9} {_band(p, 'median_ttft_ms'):>24} "
            f"{_band(p, 'median_tpot_ms', 1):>22} {_band(p, 'output_throughput'):>24} "
            f"{_fmt(p.output_tok_s_per_device, 1):>9} {_fmt(p.tok_s_per_user, 1):>10} "
            f"{_fmt(p.running_requests, 1):>7}  {'; '.join(notes)}"
        )
    if first.shape_basis:
        lines.append(f"# {first.shape_basis}")
    lines += why_lines(preds)
    if source:
        lines.append(f"# calibration: {source}")
    return "\n".join(lines) + "\n"


def why_text(p: Prediction) -> str:
    """'TPOT: weight streaming 61%, fixed overhead 24%; TTFT: compute 70%, communication 21%'."""
    parts = [f"{why.metric}: {why.text()}" for why in (p.tpot_why, p.ttft_why) if why is not None and why.shares]
    return "; ".join(parts) or "not predicted"


def why_lines(preds: list[Prediction]) -> list[str]:
    """What bounds each prediction: its TPOT (one decode step per token) and TTFT split into the
    model's own terms (perfmodel/attribution.py), the largest first, so a user sees which number to
    question."""
    lines = ["## what bounds it (shares of the model's own terms; perfmodel/attribution.py)"]
    for p in preds:
        load = f"c={p.concurrency}" if p.concurrency is not None else f"{p.request_rate:g}/s"
        lines.append(f"  in={p.input_len} out={p.output_len} {load}: {why_text(p)}")
    return lines
