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

Bisection: low is probed first (not met: nothing in the bracket meets the SLO), then high (met: the
limit is at or above high), then the middle of the bracket until it is one step wide; the answer is
its lower end, within one step of the true limit when attainment falls monotonically with load.
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


@dataclass(frozen=True)
class Probe:
    value: float
    scenario: str
    status: str
    met: bool
    why: str
    reused: bool = False


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


PROBE_ID = re.compile(r"^(?P<base>.+)@(c\d+|r[0-9.e+-]+)$")


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
    if spec.prompts_per_value:
        update["num_prompts"] = max(scenario.num_prompts, math.ceil(spec.prompts_per_value * value))
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
    if tag.get("criterion", "attainment") == "attainment":
        good = row.get("goodput") or {}
        share = good.get("slo_attainment")
        if not isinstance(share, (int, float)):
            return False, "no per-request timings to judge the SLO by (goodput missing)"
        need = float(tag.get("attainment") or 0.9)
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


def search(
    scenario: Scenario,
    run_probe: Callable[[Scenario, dict[str, Any]], dict[str, Any]],
    previous: Sequence[Mapping[str, Any]] = (),
    time_scale: float = 1.0,
) -> SearchResult:
    """Bisect the scenario's search bracket; `run_probe(probe, tag)` runs one probe and returns its
    row (the speed stage's run_one; a fake in tests); finished probes of the same search in
    `previous` (bench.jsonl rows) are reused, not run again."""
    spec = _spec(scenario)
    tag = search_tag(scenario, time_scale)
    reuse: dict[str, Mapping[str, Any]] = {}
    for row in previous:  # the latest attempt of each probe wins, as in load_results
        if (row.get("search") or {}).get("key") == tag["key"]:
            reuse[str(row.get("scenario"))] = row
    result = SearchResult(scenario.id, spec.over, tag["slo"], spec.criterion, spec.step)

    def met(value: float) -> bool:
        probe = probe_scenario(scenario, value, time_scale)
        old = reuse.get(probe.id)
        reused = old is not None and old.get("status") in FINISHED
        row = old if reused and old is not None else run_probe(probe, {**tag, "value": value})
        ok, why = judge(row)
        result.probes.append(Probe(value, probe.id, str(row.get("status")), ok, why, reused))
        return ok

    result.best, result.above, result.note = bisect(grid(spec), met)
    return result


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
        report_progress(run.folder, "speed", f"{probe.id}: probing {tag['over']} {tag['value']:g}", milestone=True)
        row = run_one(probe, probe_run)
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
    did not, and a note when the probes are not monotone (a met value above a missed one)."""
    latest: dict[str, dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        tag = row.get("search") or {}
        if tag.get("of"):
            latest.setdefault(str(tag["of"]), {})[str(row.get("scenario"))] = row
    out = []
    for base, probes in latest.items():
        tag = next(iter(probes.values()))["search"]
        step = float(tag.get("step") or 0.0)
        result = SearchResult(base, str(tag.get("over")), dict(tag.get("slo") or {}), str(tag.get("criterion")), step)
        for row in probes.values():
            ok, why = judge(row)
            value = float((row.get("search") or {}).get("value") or 0.0)
            result.probes.append(Probe(value, str(row.get("scenario")), str(row.get("status")), ok, why))
        met = [p.value for p in result.probes if p.met]
        missed = [p.value for p in result.probes if not p.met]
        result.best = max(met) if met else None
        above = [v for v in missed if result.best is None or v > result.best]
        result.above = min(above) if above else None
        if met and missed and min(missed) < max(met):
            result.note = f"not monotone: {min(missed):g} missed the SLO below {max(met):g}, which met it"
        elif result.best is None:
            result.note = "no probe met the SLO"
        elif result.above is None:
            result.note = "the highest probe met the SLO: the limit may be higher"
        out.append(result)
    return out


def _spec(scenario: Scenario) -> SearchSpec:
    if scenario.search is None:
        raise ValueError(f"scenario {scenario.id} has no search block. Fix: add search: (over, low, high, step).")
    return scenario.search
