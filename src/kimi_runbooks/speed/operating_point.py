"""The operating point: the highest max_concurrency (or request_rate) whose run still meets the SLO.

A scenario with a ``search:`` block (catalog/scenario_models.SearchSpec) is not run once: the values
low, low + step, ... up to high (high itself the last) are bisected. Each probe is the scenario with
that value (and, with prompts_per_value, enough prompts for it), run as any other scenario by the
speed stage's ``run_one`` (same worker, readiness check, samplers, goodput), so it is appended to
bench.jsonl as its own row (``<id>@c13`` / ``<id>@r2.5``) carrying a ``search`` tag. A probe meets
the SLO when it finished ok and either at least ``attainment`` of its requests were good
(goodput.py, criterion ``attainment``) or bench_serving's statistic of each SLO'd latency (median,
p99, ...) is at most the SLO. A probe that fails (an error, a dead server, over capacity) is
recorded as it is and counts as not meeting it: the search goes on below it, and the stage
reports the failure like any other.

Knee sweep (knee_sweep, on by default): from one stream up, as GuideLLM's sweep does, the values
low, 2 low, 4 low, ... high are probed in turn until one misses the SLO or adds less than MIN_GAIN
output throughput over the one before (the saturation knee: past it more load only queues). The
bisection then searches only the bracket the sweep left (the last value that met, the first that
missed), and never above the knee.

Bisection: low is probed first (not met: nothing in the bracket meets the SLO), then high (met: the
limit is at or above high), then the middle of the bracket until it is one step wide; the answer is
its lower end, within one step of the true limit when attainment falls monotonically with load.

Confirmation (confirm_repeats, 3 by default): the value found is run again that many times, each a
fresh run (new prompts, cache flushed: freshness.py) kept as `<probe>~confirm` repeat k; it is the
operating point only when every run meets the SLO, and the report gives the judged statistic's mean
with its 95% interval over those runs (repeats.interval). A value that fails its confirmation is
replaced by the one a step below (at most MAX_CONFIRM_STEPS values).

Probe sizes: a probe judged on a p-th percentile (attainment a: the a-quantile of each latency is
within the SLO; criterion median/p90/p95/p99) needs n >= ln(1 - c) / ln(p) requests at confidence
c = 0.95 (`min_requests`): with fewer, even n requests all under the SLO would not show the
percentile is (the largest of n requests is above the p-quantile with probability 1 - p^n, the
order-statistic bound). That gives 5 for the median, 29 for 90%, 59 for p95 and 299 for p99; a mean
takes 30. Probes are sized to it, and a probe that completed fewer requests does not meet the SLO.
Resumable like the stage: a rerun reuses the finished probes of the same search (same scenario,
SLO and clock: the tag's ``key``) instead of running them again, so the bisection replays to where
it stopped. ``summaries`` rebuilds each search's outcome from the rows alone (the report uses it).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..catalog import Scenario
from ..catalog.scenario_models import SLO_KEYS, SearchSpec
from ..progress import report_progress
from ..rundir import RunFolder, read_jsonl
from .observe import ObserveConfig
from .results import FINISHED
from .tokens import TokenCheck

LATENCY_KIND = {"ttft_ms": "ttft", "tpot_ms": "tpot", "e2e_ms": "e2e_latency"}
"""Our SLO names -> bench_serving's metric names ({stat}_{kind}_ms)."""
CONFIDENCE = 0.95
QUANTILE = {"median": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}
MEAN_MIN_REQUESTS = 30
"""A mean has no order-statistic bound: the usual floor for the normal approximation of a sample mean."""
MAX_QUANTILE = 0.99
"""attainment 1.0 (every request) has no finite bound: it is sized as the 99th percentile."""
MIN_GAIN = 0.05
"""The knee sweep stops once a value adds less than this share of output throughput (saturation.MIN_GAIN)."""
MAX_CONFIRM_STEPS = 3
CONFIRM = "~confirm"


def min_requests(criterion: str, attainment: float = 0.9, confidence: float = CONFIDENCE) -> int:
    """The fewest requests that can show the criterion's percentile at `confidence`: n >= ln(1-c)/ln(p)."""
    if criterion == "mean":
        return MEAN_MIN_REQUESTS
    p = min(attainment if criterion == "attainment" else QUANTILE[criterion], MAX_QUANTILE)
    return math.ceil(math.log(1.0 - confidence) / math.log(p) - 1e-9)


def _what_is_judged(criterion: str, attainment: float) -> str:
    return f"{attainment:.0%} attainment" if criterion == "attainment" else f"the {criterion}"


@dataclass(frozen=True)
class Probe:
    value: float
    scenario: str
    status: str
    met: bool
    why: str
    reused: bool = False
    phase: str = "bisect"
    """sweep (the knee sweep), bisect, or confirm (a fresh run at the value found)."""


@dataclass
class SearchResult:
    """One search: its probes in the order they ran, the value found and the bracket it ends in."""

    scenario: str
    over: str
    slo: dict[str, float]
    criterion: str
    step: float
    best: float | None = None
    above: float | None = None
    """The lowest probed value above `best` that did not meet the SLO (None: high met)."""
    note: str = ""
    knee: float | None = None
    """The last sweep value that still added output throughput, when the sweep found one."""
    knee_note: str = ""
    confirmed: float | None = None
    """The operating point: the value whose confirmation runs all met the SLO (None: none did)."""
    confirmation: dict[str, Any] = field(default_factory=dict)
    """The judged statistic over the confirmation runs: runs, met, mean and 95% interval, a note."""
    probes: list[Probe] = field(default_factory=list)
    """Last, so the record (as_dict) lists the probes after the verdict."""

    @property
    def failed(self) -> list[Probe]:
        return [p for p in self.probes if p.status != "ok"]

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def grid(spec: SearchSpec) -> list[float]:
    """low, low + step, ... below high, then high: the values a search may probe."""
    count = math.floor((spec.high - spec.low) / spec.step + 1e-9)
    values = [spec.low + k * spec.step for k in range(count + 1)]
    values = [round(v, 9) for v in values if v < spec.high - 1e-9]
    return [*values, spec.high]


def probe_id(base: str, over: str, value: float) -> str:
    return f"{base}@c{int(value)}" if over == "max_concurrency" else f"{base}@r{value:g}"


PROBE_ID = re.compile(r"^(?P<base>.+)@(c\d+|r[0-9.e+-]+)(~confirm)?$")


def base_of(scenario_id: str) -> str:
    """The searched scenario a probe row belongs to (op@c13 -> op); any other id as it is."""
    found = PROBE_ID.match(str(scenario_id))
    return found.group("base") if found else str(scenario_id)


def probe_scenario(scenario: Scenario, value: float, time_scale: float = 1.0) -> Scenario:
    """The scenario at one value of the search (no search of its own). A request rate is on the
    latency model's clock: an emulator at time scale 0.05 serves 20x the rate in wall-clock time, so
    the client is asked for value / time_scale (a concurrency needs no such change)."""
    spec = _spec(scenario)
    update: dict[str, Any] = {"id": probe_id(scenario.id, spec.over, value), "search": None}
    update[spec.over] = int(value) if spec.over == "max_concurrency" else float(value) / time_scale
    fewest = min_requests(spec.criterion, spec.attainment)
    update["num_prompts"] = max(scenario.num_prompts, fewest)
    if spec.prompts_per_value:
        update["num_prompts"] = max(update["num_prompts"], math.ceil(spec.prompts_per_value * value))
    title = scenario.title or scenario.id
    update["title"] = f"{title} ({spec.over} {value:g}, operating-point probe)"
    return scenario.model_copy(update=update)


def search_slo(scenario: Scenario) -> dict[str, float]:
    """The SLOs (ms) the probes are held to: the scenario's, or the ones search.metrics names."""
    spec = _spec(scenario)
    slo = {k: float(v) for k, v in (scenario.slo or {}).items() if k in SLO_KEYS}
    return {k: v for k, v in slo.items() if not spec.metrics or k in spec.metrics}


def search_tag(scenario: Scenario, time_scale: float = 1.0) -> dict[str, Any]:
    """What every probe row carries: enough to judge it again and to know which search it is."""
    spec = _spec(scenario)
    base = scenario.model_dump(mode="json", exclude={"id", "title"})
    tag: dict[str, Any] = {
        "of": scenario.id,
        "over": spec.over,
        "step": spec.step,
        "criterion": spec.criterion,
        "attainment": spec.attainment,
        "slo": search_slo(scenario),
        "time_scale": float(time_scale),
        "min_requests": min_requests(spec.criterion, spec.attainment),
    }
    digest = json.dumps({"scenario": base, **tag}, sort_keys=True, default=str)
    tag["key"] = hashlib.sha256(digest.encode()).hexdigest()[:16]
    return tag


def judge(row: Mapping[str, Any]) -> tuple[bool, str]:
    """(met, why) for one probe row, from its own search tag."""
    tag = row.get("search") or {}
    status = row.get("status")
    if status != "ok":
        return False, f"{status}: {row.get('error') or 'no result'}"
    slo = {k: float(v) for k, v in (tag.get("slo") or {}).items()}
    scale = float(tag.get("time_scale") or 1.0)
    criterion, need = str(tag.get("criterion", "attainment")), float(tag.get("attainment") or 0.9)
    fewest = int(tag.get("min_requests") or min_requests(criterion, need))
    good = row.get("goodput") or {}
    count = good.get("requests") if criterion == "attainment" else (row.get("metrics") or {}).get("completed")
    if isinstance(count, (int, float)) and count < fewest:
        what = _what_is_judged(criterion, need)
        return False, (
            f"{count:g} requests: too few to judge {what} at {CONFIDENCE:.0%} confidence "
            f"(rule: n >= ln(1 - c) / ln(p) = {fewest})"
        )
    if criterion == "attainment":
        share = good.get("slo_attainment")
        if not isinstance(share, (int, float)):
            return False, "no per-request timings to judge the SLO by (goodput missing)"
        verb = "met" if share >= need else "missed"
        return share >= need, f"{share:.0%} of requests met the SLO ({verb}: {need:.0%} needed)"
    stat, metrics = tag["criterion"], row.get("metrics") or {}
    parts, met = [], True
    for key, ceiling in slo.items():
        observed = metrics.get(f"{stat}_{LATENCY_KIND[key]}_ms")
        if not isinstance(observed, (int, float)):
            return False, f"bench_serving reported no {stat}_{LATENCY_KIND[key]}_ms"
        fits = observed <= ceiling * scale
        met &= fits
        parts.append(f"{stat} {key} {observed / scale:.1f} {'<=' if fits else '>'} {ceiling:g}")
    return met, "; ".join(parts)


def bisect(values: Sequence[float], met: Callable[[float], bool]) -> tuple[float | None, float | None, str]:
    """(best, above, note): low first, then high, then halves until the bracket is one step wide."""
    lo, hi = 0, len(values) - 1
    if not met(values[lo]):
        return None, values[lo], f"even the lowest value ({values[lo]:g}) did not meet the SLO"
    if met(values[hi]):
        return values[hi], None, f"the highest value ({values[hi]:g}) met the SLO: the limit may be higher"
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if met(values[mid]):
            lo = mid
        else:
            hi = mid
    return values[lo], values[hi], f"bracket [{values[lo]:g}, {values[hi]:g}] is one step wide"


def sweep_values(values: Sequence[float]) -> list[float]:
    """low, 2 low, 4 low, ... (each the grid value at or below it), then high: the knee sweep's values."""
    out: list[float] = []
    target = values[0]
    while target < values[-1]:
        below = max(v for v in values if v <= target + 1e-9)
        if not out or below > out[-1]:
            out.append(below)
        target *= 2
    return [*out, values[-1]] if out[-1] != values[-1] else out


def _throughput(row: Mapping[str, Any]) -> float | None:
    value = (row.get("metrics") or {}).get("output_throughput")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def knee_sweep(
    values: Sequence[float], row_at: Callable[[float], Mapping[str, Any]]
) -> tuple[list[float], float | None, str]:
    """(the grid values left to bisect, the knee or None, what the sweep found), the sweep's rows
    from `row_at`: it stops at the first value that misses the SLO or adds < MIN_GAIN throughput."""
    previous: tuple[float, float | None] | None = None
    for value in sweep_values(values):
        row = row_at(value)
        if not judge(row)[0]:
            low = previous[0] if previous else value
            return [v for v in values if low <= v <= value], None, f"the sweep first missed the SLO at {value:g}"
        now = _throughput(row)
        if previous is not None and previous[1] and now is not None and (now - previous[1]) / previous[1] < MIN_GAIN:
            gain = (now - previous[1]) / previous[1]
            note = (
                f"saturation knee at {previous[0]:g}: output throughput {previous[1]:.0f} tok/s, {gain:+.0%} at "
                f"{value:g} (less than {MIN_GAIN:.0%}): the search stays at or below the knee"
            )
            return [v for v in values if previous[0] <= v <= previous[0]], previous[0], note
        previous = (value, now)
    return [values[-1]], None, f"throughput still grew up to {values[-1]:g}, which met the SLO"


def _judged_numbers(row: Mapping[str, Any]) -> dict[str, float]:
    """What judge() compared with the SLO, as numbers: the attainment share, or each SLO'd statistic (ms,
    on the model's clock)."""
    tag = row.get("search") or {}
    if tag.get("criterion", "attainment") == "attainment":
        share = (row.get("goodput") or {}).get("slo_attainment")
        return {"slo_attainment": float(share)} if isinstance(share, (int, float)) else {}
    scale = float(tag.get("time_scale") or 1.0)
    out = {}
    for key in tag.get("slo") or {}:
        name = f"{tag['criterion']}_{LATENCY_KIND[key]}_ms"
        observed = (row.get("metrics") or {}).get(name)
        if isinstance(observed, (int, float)):
            out[name] = float(observed) / scale
    return out


def confirmation_of(value: float, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The confirmation runs at one value: how many met the SLO, and each judged statistic's mean and
    95% interval over them (Student t, repeats.interval)."""
    from .repeats import interval

    met = [judge(r)[0] for r in rows]
    stats: dict[str, Any] = {}
    for name in sorted({k for r in rows for k in _judged_numbers(r)}):
        iv = interval(_judged_numbers(r).get(name) for r in rows)
        if iv is not None:
            low, high = iv.low, iv.high
            if name == "slo_attainment" and low is not None and high is not None:  # a share: within [0, 1]
                low, high = max(low, 0.0), min(high, 1.0)
            stats[name] = {"mean": iv.mean, "low": low, "high": high, "n": iv.n}
    parts = [
        f"{name} {st['mean']:.4g}" + (f" [{st['low']:.4g}, {st['high']:.4g}]" if st["low"] is not None else "")
        for name, st in stats.items()
    ]
    note = f"{sum(met)} of {len(rows)} fresh runs at {value:g} met the SLO"
    note += (": " + ", ".join(parts) + " (mean [95% interval over the runs])") if parts else ""
    past = _past_the_slo(rows[0].get("search") or {} if rows else {}, stats)
    if past:
        note += f"; the interval reaches past the SLO ({', '.join(past)}): more confirm_repeats narrow it"
    confirmed = bool(rows) and all(met)
    return {
        "value": value,
        "runs": len(rows),
        "met": sum(met),
        "confirmed": confirmed,
        "statistics": stats,
        "note": note,
    }


def _past_the_slo(tag: Mapping[str, Any], stats: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Which intervals reach past what the SLO allows (a latency's upper end above it, an attainment's
    lower end below the share needed): the runs met it, but their mean is not sure to."""
    out = []
    attain = stats.get("slo_attainment") or {}
    need = float(tag.get("attainment") or 0.9)
    if attain.get("low") is not None and attain["low"] < need:
        out.append(f"slo_attainment {attain['low']:.4g} < {need:g}")
    for key, ceiling in (tag.get("slo") or {}).items():
        st = stats.get(f"{tag.get('criterion')}_{LATENCY_KIND.get(key, key)}_ms") or {}
        if st.get("high") is not None and st["high"] > float(ceiling):
            out.append(f"{key} {st['high']:.4g} > {float(ceiling):g}")
    return out


def confirm_id(probe: str) -> str:
    return probe + CONFIRM


def search(
    scenario: Scenario,
    run_probe: Callable[[Scenario, dict[str, Any]], dict[str, Any]],
    previous: Sequence[Mapping[str, Any]] = (),
    time_scale: float = 1.0,
) -> SearchResult:
    """Sweep to the knee, bisect the bracket it leaves, confirm the value found with fresh runs;
    `run_probe(probe, tag)` runs one probe and returns its row (the speed stage's run_one; a fake in
    tests); finished probes of the same search in `previous` (bench.jsonl rows) are reused."""
    spec = _spec(scenario)
    tag = search_tag(scenario, time_scale)
    reuse: dict[tuple[str, int], Mapping[str, Any]] = {}
    for row in previous:  # the latest attempt of each probe wins, as in load_results
        if (row.get("search") or {}).get("key") == tag["key"]:
            reuse[(str(row.get("scenario")), int(row.get("repeat") or 1))] = row
    result = SearchResult(scenario.id, spec.over, tag["slo"], spec.criterion, spec.step)
    seen: dict[float, Mapping[str, Any]] = {}
    phase = ["sweep" if spec.knee_sweep else "bisect"]

    def run(probe: Scenario, value: float, extra: dict[str, Any], repeat: int = 1) -> Mapping[str, Any]:
        old = reuse.get((probe.id, repeat))
        reused = old is not None and old.get("status") in FINISHED
        row = old if reused and old is not None else run_probe(probe, {**tag, "value": value, **extra})
        ok, why = judge(row)
        result.probes.append(Probe(value, probe.id, str(row.get("status")), ok, why, reused, extra.get("phase", "")))
        return row

    def row_at(value: float) -> Mapping[str, Any]:
        if value not in seen:
            seen[value] = run(probe_scenario(scenario, value, time_scale), value, {"phase": phase[0]})
        return seen[value]

    values = grid(spec)
    if spec.knee_sweep:
        values, result.knee, result.knee_note = knee_sweep(values, row_at)
        phase[0] = "bisect"
    result.best, result.above, result.note = bisect(values, lambda v: judge(row_at(v))[0])
    if result.knee is not None:
        result.above, result.note = None, result.knee_note
    if spec.confirm_repeats and result.best is not None:
        confirm(scenario, spec, result, time_scale, run)
    return result


def confirm(
    scenario: Scenario,
    spec: SearchSpec,
    result: SearchResult,
    time_scale: float,
    run: Callable[[Scenario, float, dict[str, Any], int], Mapping[str, Any]],
) -> None:
    """Fresh runs at the value found (then a step below, up to MAX_CONFIRM_STEPS values) until every
    run at one value meets the SLO; that value is `result.confirmed`."""
    value, missed = result.best, []
    for _ in range(MAX_CONFIRM_STEPS):
        if value is None or value < spec.low - 1e-9:
            break
        probe = probe_scenario(scenario, value, time_scale)
        probe = probe.model_copy(update={"id": confirm_id(probe.id), "title": f"{probe.title} (confirmation)"})
        rows = []
        for k in range(1, spec.confirm_repeats + 1):
            extra = {"phase": "confirm", "confirm": k, "confirms": spec.confirm_repeats}
            rows.append(run(probe, value, extra, k))
            if not judge(rows[-1])[0]:
                break  # one fresh run missed: this value is not confirmed
        result.confirmation = confirmation_of(value, rows)
        if result.confirmation["confirmed"]:
            result.confirmed = value
            return
        missed.append(value)
        result.confirmation["note"] += f" (fresh runs missed at {', '.join(f'{v:g}' for v in missed)})"
        value = round(value - spec.step, 9)


class ProbeRun(Protocol):
    """What run_search reads and sets of speed.run.SpeedRun (a copy per probe)."""

    folder: RunFolder
    common: dict[str, Any]
    observe: ObserveConfig | None
    token_checks: dict[str, TokenCheck]


def run_search(scenario: Scenario, run: ProbeRun, run_one: Callable[[Scenario, Any], dict[str, Any]]) -> dict[str, Any]:
    """The search through the speed stage's own runner; a summary for its progress line (the probes
    are the rows; the summary itself is rebuilt from them by `summaries`)."""
    scale = run.observe.time_scale if run.observe is not None else 1.0
    slo = search_slo(scenario)

    def run_probe(probe: Scenario, tag: dict[str, Any]) -> dict[str, Any]:
        probe_run = copy.copy(run)
        probe_run.common = {**run.common, "search": tag}
        if run.observe is not None:
            probe_run.observe = dataclasses.replace(run.observe, slos={**run.observe.slos, probe.id: slo})
        if scenario.id in run.token_checks:
            run.token_checks.setdefault(probe.id, run.token_checks[scenario.id])
        what = f"confirming {tag['confirm']} of {tag['confirms']}" if tag.get("confirm") else "probing"
        report_progress(run.folder, "speed", f"{probe.id}: {what} {tag['over']} {tag['value']:g}", milestone=True)
        repeat = {"repeat": tag["confirm"], "repeats": tag["confirms"]} if tag.get("confirm") else {}
        row = run_one(probe, probe_run, **repeat)
        report_progress(run.folder, "speed", f"{probe.id}: {row.get('status')}, {judge(row)[1]}", milestone=True)
        return row

    found = search(scenario, run_probe, read_jsonl(run.folder.bench), scale)
    failed = found.failed
    return {
        "status": "failed" if failed else "ok",
        "error": (f"{len(failed)} probe(s) failed: " + ", ".join(p.scenario for p in failed)) if failed else None,
        "operating_point": found.as_dict(),
    }


def summaries(rows: Sequence[Mapping[str, Any]]) -> list[SearchResult]:
    """Each search's outcome rebuilt from its probe rows (the latest attempt of each probe), in the
    order the searches first appear: the highest value that met the SLO, the lowest above it that
    did not, a note when the probes are not monotone (a met value above a missed one), the knee the
    sweep found, and the confirmation runs (the last value confirmed, with its interval)."""
    latest: dict[str, dict[tuple[str, int], Mapping[str, Any]]] = {}
    for row in rows:
        tag = row.get("search") or {}
        if tag.get("of"):
            latest.setdefault(str(tag["of"]), {})[(str(row.get("scenario")), int(row.get("repeat") or 1))] = row
    out = []
    for base, probes in latest.items():
        tag = next(iter(probes.values()))["search"]
        step = float(tag.get("step") or 0.0)
        result = SearchResult(base, str(tag.get("over")), dict(tag.get("slo") or {}), str(tag.get("criterion")), step)
        confirms: dict[float, list[Mapping[str, Any]]] = {}
        for row in probes.values():
            ok, why = judge(row)
            row_tag = row.get("search") or {}
            value = float(row_tag.get("value") or 0.0)
            phase = str(row_tag.get("phase") or "bisect")
            result.probes.append(Probe(value, str(row.get("scenario")), str(row.get("status")), ok, why, phase=phase))
            if row_tag.get("confirm"):
                confirms.setdefault(value, []).append(row)
        searched = [p for p in result.probes if p.phase != "confirm"]
        met = [p.value for p in searched if p.met]
        missed = [p.value for p in searched if not p.met]
        result.best = max(met) if met else None
        above = [v for v in missed if result.best is None or v > result.best]
        result.above = min(above) if above else None
        if met and missed and min(missed) < max(met):
            result.note = f"not monotone: {min(missed):g} missed the SLO below {max(met):g}, which met it"
        elif result.best is None:
            result.note = "no probe met the SLO"
        elif result.above is None:
            result.note = "the highest probe met the SLO: the limit may be higher"
        _knee_from_rows(result, [r for r in probes.values() if (r.get("search") or {}).get("phase") == "sweep"])
        missed: list[float] = []
        for value in sorted(confirms, reverse=True):  # the highest value all of whose runs met, as confirm()
            result.confirmation = confirmation_of(value, confirms[value])
            if result.confirmation["confirmed"]:
                result.confirmed = value
                break
            missed.append(value)
            result.confirmation["note"] += f" (fresh runs missed at {', '.join(f'{v:g}' for v in missed)})"
        out.append(result)
    return out


def _knee_from_rows(result: SearchResult, sweep: Sequence[Mapping[str, Any]]) -> None:
    """The knee the sweep's rows show (the same rule as knee_sweep), for a result rebuilt from rows."""
    ordered = sorted(sweep, key=lambda r: float((r.get("search") or {}).get("value") or 0.0))
    for before, now in zip(ordered, ordered[1:]):
        a, b = _throughput(before), _throughput(now)
        if a and b is not None and judge(now)[0] and (b - a) / a < MIN_GAIN:
            knee, value = float(before["search"]["value"]), float(now["search"]["value"])
            result.knee = knee
            gain = (b - a) / a
            result.knee_note = f"saturation knee at {knee:g}: output throughput {a:.0f} tok/s, {gain:+.0%} at {value:g}"
            return


def _spec(scenario: Scenario) -> SearchSpec:
    if scenario.search is None:
        raise ValueError(f"scenario {scenario.id} has no search block. Fix: add search: (over, low, high, step).")
    return scenario.search
