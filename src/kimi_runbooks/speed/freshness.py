"""Fresh prompts: each run of a scenario (a probe, a sweep step, a repeat) sends prompts no earlier run sent.

A prefix cache serves a repeated prompt from memory: a probe that resends an earlier probe's prompts
measures the cache, not the load (issue 42: a rate search's every probe after the first was served
from cache; replayed fresh, its median TTFT was 11x the SLO). bench_serving draws its prompts from
`--seed` (0.5.23: default 42, `random.seed` and `np.random.seed` per run), so two runs with the same
seed send the same prompts, and two random-ids runs with the same seed and different lengths send
prompts that share a prefix (the same stream of token ids, cut at different lengths). Two rules:

* every run gets a seed no earlier row of the run folder used (`fresh_seed`: the scenario's seed,
  else the stage's, else bench_serving's 42, moved on to the next unused one), so sweeps whose
  scenarios leave `seed: null` no longer all send seed 42's prompts;
* where the server offers SGLang's `/flush_cache` (it answers /server_info: SGLang, its router, the
  emulator), bench_serving `--flush-cache` empties the prefix cache after the warm-up, which is the
  run's own first prompt; without it that one prompt is served from cache and the row says so.

Workloads built to share prefixes (a multi-turn trace, mooncake sessions, generated shared prefixes)
keep their sharing within the run: they get the same seed rule and flush, and are labelled
"shared-prefix" in the report (their cache hits are the workload's own), every other one "fresh".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..catalog import Scenario

BENCH_DEFAULT_SEED = 42
"""bench_serving 0.5.23's `--seed` default (benchmark/serving.py): what a run without --seed used."""
SHARED_PREFIX_DATASETS = frozenset({"agentic-trace", "mooncake", "generated-shared-prefix"})
FRESH = "fresh"
SHARED_PREFIX = "shared-prefix"


@dataclass(frozen=True)
class Prompts:
    """What one run sends: its seed, whether the cache is flushed after its warm-up, and the label."""

    kind: str
    seed: int
    flush_cache: bool
    note: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_of(argv: Iterable[Any]) -> int | None:
    """The seed a recorded bench_serving argv ran with (42 when it gave none); None: no run."""
    args = [str(a) for a in argv]
    if not args:
        return None
    if "--seed" in args and args.index("--seed") + 1 < len(args):
        try:
            return int(args[args.index("--seed") + 1])
        except ValueError:
            return None
    return BENCH_DEFAULT_SEED


def used_seeds(rows: Iterable[Mapping[str, Any]]) -> set[int]:
    """Every seed an earlier row of bench.jsonl sent prompts with (rows not run have no argv)."""
    seeds = {seed_of(row.get("argv") or []) for row in rows}
    return {s for s in seeds if s is not None}


def fresh_seed(base: int, used: set[int]) -> int:
    """`base`, or the next seed after it that no earlier run used."""
    seed = base
    while seed in used:
        seed += 1
    return seed


def plan_prompts(scenario: Scenario, stage_seed: int | None, used: set[int], flush_offered: bool) -> Prompts:
    """The seed and flush for the next run of `scenario`, given the seeds earlier runs used."""
    base = scenario.seed if scenario.seed is not None else stage_seed
    base = BENCH_DEFAULT_SEED if base is None else base
    seed = fresh_seed(base, used)
    moved = f"seed {seed} ({base} was used by an earlier run)" if seed != base else f"seed {seed}"
    if flush_offered:
        cache = "prefix cache flushed after the warm-up"
    else:
        cache = "the server offers no /flush_cache: the warm-up request, the run's first prompt, is served from cache"
    if scenario.dataset in SHARED_PREFIX_DATASETS:
        kind, what = (
            SHARED_PREFIX,
            f"{scenario.dataset} shares prefixes within the run by design (its hits are its own)",
        )
    else:
        kind, what = FRESH, "no prompt an earlier run in this folder sent"
    return Prompts(kind, seed, flush_offered, f"{what}; {moved}; {cache}")
