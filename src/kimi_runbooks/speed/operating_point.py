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
low, 2 low, 4 low, ... high are probed in turn until one misses the SLO or adds less than knee.MIN_GAIN
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

Not representative: a probe or confirmation run the emulator fell behind on (its latencies are the
host's, not the model's: emulator_lag.py) is neither met nor missed (Probe.met None,
probe_verdict.verdict). A host that fell behind for a moment (another process took the cores) is
not the host that always does: such a run is run again, fresh (a new seed, as every run), up to
BEHIND_RETRIES times, and the last attempt stands (the earlier ones stay in bench.jsonl, tagged with
their attempt). One still behind after that is not climbed on (treated as not shown to meet the SLO)
and the verdict says which values were not judged and the time scale to rerun at, never a silent
"missed" or NOT CONFIRMED (the time scale is the emulator's start-up setting: nothing lets the stage
rerun one probe slower).

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
from .knee import knee_from_rows, knee_sweep
from .observe import ObserveConfig
from .probe_verdict import NOT_REPRESENTATIVE, behind, confirm_id, confirmation_of, judge, min_requests, verdict
from .results import FINISHED
from .tokens import TokenCheck

MAX_CONFIRM_STEPS = 3
"""Values a confirmation tries (the value found, then a step below each time) before it gives up."""
BEHIND_RETRIES = 2
"""Fresh reruns of a probe the emulator fell behind on before it is left not judged."""


@dataclass(frozen=True)
class Probe:
    value: float
    scenario: str
    status: str
    met: bool | None
    """None: not judged (the emulator fell behind its latency model: not representative)."""
    why: str
    reused: bool = False
    phase: str = "bisect"
    """sweep (the knee sweep), bisect, or confirm (a fresh run at the value found)."""
    suggested_time_scale: float | None = None
    """For a probe not judged: the time scale its emulator lag verdict suggests rerunning at."""
    rerun: bool = False
    """Not judged, then run again (BEHIND_RETRIES): the next attempt stands, this one is history."""


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

    @property
    def unjudged(self) -> list[Probe]:
        """Probes not judged (the emulator fell behind its latency model on them) and not run again."""
        return [p for p in self.probes if p.met is None and not p.rerun]

    def unjudged_note(self) -> str:
        """Which values were not judged and the fix ("" when every probe was judged)."""
        if not self.unjudged:
            return ""
        values = ", ".join(dict.fromkeys(f"{p.value:g}" for p in self.unjudged))
        scales = [p.suggested_time_scale for p in self.unjudged if p.suggested_time_scale is not None]
        fix = f"rerun at time_scale {max(scales):g} or above" if scales else "fewer requests or more free cores"
        return (
            f"{len(self.unjudged)} run(s) at {self.over} {values} not judged, {NOT_REPRESENTATIVE} "
            f"(their latencies are the host's, so the limit there is unknown). Fix: {fix}"
        )

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
        if old is not None and old.get("status") in FINISHED:
            result.probes.append(probe_of(value, old, str(extra.get("phase", "")), reused=True))
            return old
        row = run_probe(probe, {**tag, "value": value, **extra})
        for attempt in range(2, BEHIND_RETRIES + 2):
            if verdict(row) is not None:
                break
            result.probes.append(dataclasses.replace(probe_of(value, row, str(extra.get("phase", ""))), rerun=True))
            row = run_probe(probe, {**tag, "value": value, **extra, "attempt": attempt})
        result.probes.append(probe_of(value, row, str(extra.get("phase", ""))))
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
    lowest = row_at(values[0])
    if result.best is None and lowest.get("status") != "ok":
        result.note = f"the lowest value ({values[0]:g}) failed to run: {judge(lowest)[1]}"
    elif result.best is None and verdict(lowest) is None:
        result.note = f"the lowest value ({values[0]:g}) was not judged"
    if result.knee is not None:
        result.above, result.note = None, result.knee_note
    if spec.confirm_repeats and result.best is not None:
        confirm(scenario, spec, result, time_scale, run)
    if result.unjudged:
        result.note = f"{result.note}; {result.unjudged_note()}" if result.note else result.unjudged_note()
    return result


def probe_of(value: float, row: Mapping[str, Any], phase: str, reused: bool = False) -> Probe:
    """A probe's record from its row: met, missed, or not judged (None) when the emulator fell behind."""
    scale = (behind(row) or {}).get("suggested_time_scale")
    met = verdict(row)
    suggested = float(scale) if met is None and isinstance(scale, (int, float)) else None
    why = judge(row)[1]
    return Probe(value, str(row.get("scenario")), str(row.get("status")), met, why, reused, phase, suggested)


def confirm(
    scenario: Scenario,
    spec: SearchSpec,
    result: SearchResult,
    time_scale: float,
    run: Callable[[Scenario, float, dict[str, Any], int], Mapping[str, Any]],
) -> None:
    """Fresh runs at the value found (then a step below, up to MAX_CONFIRM_STEPS values) until every
    run at one value meets the SLO; that value is `result.confirmed`."""
    value, missed = result.best, []  # the values not confirmed, each "v" or "v (not judged)"
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
        missed.append(_not_confirmed(value, rows))
        result.confirmation["note"] += _not_confirmed_note(missed)
        value = round(value - spec.step, 9)


def _not_confirmed(value: float, rows: Sequence[Mapping[str, Any]]) -> str:
    """A value whose fresh runs did not all meet the SLO: "4" (a run missed) or "4 (not judged)"."""
    return f"{value:g}" + (" (not judged)" if any(verdict(r) is None for r in rows) else "")


def _not_confirmed_note(values: Sequence[str]) -> str:
    what = "not confirmed at" if any(v.endswith("(not judged)") for v in values) else "fresh runs missed at"
    return f" ({what} {', '.join(values)})"


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
            row_tag = row.get("search") or {}
            value = float(row_tag.get("value") or 0.0)
            result.probes.append(probe_of(value, row, str(row_tag.get("phase") or "bisect")))
            if row_tag.get("confirm"):
                confirms.setdefault(value, []).append(row)
        sweep = [r for r in probes.values() if (r.get("search") or {}).get("phase") == "sweep"]
        result.knee, result.knee_note = knee_from_rows(sweep)
        searched = [p for p in result.probes if p.phase != "confirm"]
        met = [p.value for p in searched if p.met and (result.knee is None or p.value <= result.knee)]
        missed = [p.value for p in searched if not p.met]  # not judged: not shown to meet, as search() treats it
        result.best = max(met) if met else None
        above = [v for v in missed if result.best is None or v > result.best]
        result.above = min(above) if above else None
        judged_missed = [p.value for p in searched if p.met is False]
        if met and judged_missed and min(judged_missed) < max(met):
            result.note = f"not monotone: {min(judged_missed):g} missed the SLO below {max(met):g}, which met it"
        elif result.best is None:
            ran_missed = [p.value for p in searched if p.met is False and p.status == "ok"]
            broke = ", ".join(f"{p.value:g}" for p in searched if p.status != "ok")
            if ran_missed:
                result.note = "no probe met the SLO" + (f" ({broke} failed to run)" if broke else "")
            elif broke:
                result.note = f"no probe ran to the end: {broke} failed to run"
            else:
                result.note = "no probe was judged"
        elif result.knee is not None:  # held at the knee, as search() holds it
            result.note = result.knee_note
        elif result.above is None:
            result.note = "the highest probe met the SLO: the limit may be higher"
        tried: list[str] = []
        for value in sorted(confirms, reverse=True):  # the highest value all of whose runs met, as confirm()
            result.confirmation = confirmation_of(value, confirms[value])
            if result.confirmation["confirmed"]:
                result.confirmed = value
                break
            tried.append(_not_confirmed(value, confirms[value]))
            result.confirmation["note"] += _not_confirmed_note(tried)
        if result.unjudged:
            result.note = f"{result.note}; {result.unjudged_note()}" if result.note else result.unjudged_note()
        out.append(result)
    return out


def _spec(scenario: Scenario) -> SearchSpec:
    if scenario.search is None:
        raise ValueError(f"scenario {scenario.id} has no search block. Fix: add search: (over, low, high, step).")
    return scenario.search
