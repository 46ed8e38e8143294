"""Fit the hardware efficiencies and software-stack terms on the published results.

One joint, BOUNDED least squares on log(predicted / published) over the fit observations
(observations.py: measured rows weigh 1, tight Ascend SLO targets 0.5; `held_out: true` rows never),
in log coordinates, every parameter held inside its documented range (factors.RANGES), with a ridge
towards its prior (RANGES.prior_sd) so what the rows do not pin down stays put. Parameters are
shared where the physics or the software is (factors.py): one streaming efficiency per memory
technology, one GEMM efficiency for every vendor, one stack term per stack key for every platform
running that stack.

Degrees of freedom (`free_parameters`): a parameter is fitted only while every family whose rows
inform it stays within its budget of independent runs / 3, a shared parameter counting for each
family in proportion to that family's runs among those it serves (DOF_RUNS_PER_PARAMETER). The
rest stay at their priors; `dof_table` prints each family's runs, parameters and budget.

Command: `python -m kimi_runbooks.perfmodel calibrate [--write]`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.optimize import least_squares
from scipy.sparse import lil_matrix

from ._deps import Catalog, plan
from .factors import KINDS, RANGES, compose, kind_of, prior_of, term_keys
from .observations import Observation
from .predict import Prediction, Predictor
from .store import Calibration, family_stack, pipeline_key

DOF_RUNS_PER_PARAMETER = 3.0
RESIDUAL_SD = 0.25  # typical log error of one row; with RANGES.prior_sd sets the ridge weights
MISSING_RESIDUAL = 5.0  # a prediction that cannot be made (no KV room) counts as a big miss
MAX_EVALUATIONS = 60
DIFF_STEP = 1e-3
START_OVERRIDES: tuple[dict[str, float], ...] = ({}, {"stack.small_batch_gemm": 0.01, "stack.attn_latency_ns": 30.0})
"""Starting points: the batch cost of a decode step can come from the expert kernels or from
small-batch GEMMs, the context cost from the batch's KV traffic or one request's attention latency."""
POLISH_ROUNDS = 6
POLISH_TOLERANCE = 1e-3
"""The predictions are not smooth everywhere (lock-step waves, KV capacity), so trf can stop early: the
best start is restarted until a restart lowers the cost by less than 0.1% (at most POLISH_ROUNDS)."""
PRIORITY = KINDS
"""Order in which parameters of equal sharing claim the budget: hardware first, then stack terms."""


def metric_value(p: Prediction, metric: str) -> float:
    return float(getattr(p, metric))


class Evaluator:
    """Predicts observations under trial parameters; plans are built once per launch config."""

    def __init__(self, catalog: Catalog, obs: list[Observation]) -> None:
        self.catalog = catalog
        self.obs = obs
        self._predictors: dict[str, Predictor] = {}
        for o in obs:
            key = self._key(o)
            if key not in self._predictors:
                self._predictors[key] = Predictor(plan(o.config, catalog), Calibration())

    @staticmethod
    def _key(o: Observation) -> str:
        return repr(sorted(o.config.items()))

    def names(self, o: Observation) -> tuple[str, ...]:
        return term_keys(o.family, o.stack).names()

    def weight_format(self, o: Observation) -> str:
        return self._predictors[self._key(o)].plan.model.weight_format

    def predict(self, o: Observation, values: dict[str, float], lenders: Collection[str] | None = None) -> Prediction:
        predictor = self._predictors[self._key(o)]
        predictor.factors = compose(values, term_keys(o.family, o.stack), lenders)
        accept = _accept(o)
        scenario = (
            o.scenario if accept is None or o.scenario.accept_length else replace(o.scenario, accept_length=accept)
        )
        return predictor.predict(scenario)

    def value(self, o: Observation, values: dict[str, float], lenders: Collection[str] | None = None) -> float:
        return metric_value(self.predict(o, values, lenders), o.metric)

    def residual(self, o: Observation, values: dict[str, float], lenders: Collection[str] | None = None) -> float:
        value = self.value(o, values, lenders)
        ok = math.isfinite(value) and value > 0
        return math.sqrt(o.weight) * (math.log(value / o.published) if ok else MISSING_RESIDUAL)


def _accept(o: Observation) -> float | None:
    spec = o.stack.speculative
    return spec.accept_length if spec is not None else None


def runs(rows: Iterable[Observation]) -> dict[str, int]:
    """Independent runs per family: distinct (reference, scenario) among the fit rows."""
    seen: dict[str, set[tuple[str, str]]] = {}
    for o in rows:
        if o.fit:
            seen.setdefault(o.family, set()).add((o.reference_id, o.scenario_id))
    return {fam: len(v) for fam, v in seen.items()}


@dataclass(frozen=True)
class Budget:
    free: tuple[str, ...]
    fixed: tuple[str, ...]  # touched by fit rows but left at the prior (over budget, or never fitted)
    runs: dict[str, int]
    dof: dict[str, float]  # per family: sum of its shares of the free parameters
    families_of: dict[str, tuple[str, ...]]
    points: dict[str, int]  # per family: fitted data points (one run gives one per metric)


def free_parameters(ev: Evaluator, rows: Iterable[Observation]) -> Budget:
    """Which parameters the rows may fit without any family exceeding runs / 3 (greedy: parameters
    shared by more families first, hardware before stack terms)."""
    rows = [o for o in rows if o.fit]
    n_runs = runs(rows)
    families: dict[str, set[str]] = {}
    for o in rows:
        for name in ev.names(o):
            families.setdefault(name, set()).add(o.family)
    order = sorted(families, key=lambda n: (-len(families[n]), PRIORITY.index(kind_of(n)), n))
    dof = dict.fromkeys(n_runs, 0.0)
    free, fixed = [], []
    for name in order:
        fams = families[name]
        total = sum(n_runs[f] for f in fams)
        shares = {f: n_runs[f] / total for f in fams}
        fits = RANGES[kind_of(name)].fitted and all(
            dof[f] + shares[f] <= n_runs[f] / DOF_RUNS_PER_PARAMETER + 1e-9 for f in fams
        )
        if fits:
            free.append(name)
            for f in fams:
                dof[f] += shares[f]
        else:
            fixed.append(name)
    points = {f: sum(1 for o in rows if o.family == f) for f in n_runs}
    return Budget(tuple(free), tuple(fixed), n_runs, dof, {n: tuple(sorted(f)) for n, f in families.items()}, points)


def fit(
    ev: Evaluator, rows: Iterable[Observation], free: Iterable[str] | None = None, start: dict[str, float] | None = None
) -> dict[str, float]:
    """The free parameters' values (bounded, ridge to the prior); the others are not returned. With
    `start` (validation's run-out refits), the parameters not refitted keep their `start` values."""
    rows = [o for o in rows if o.fit]
    names = list(free) if free is not None else list(free_parameters(ev, rows).free)
    if not names or not rows:
        return {}
    index = {n: i for i, n in enumerate(names)}
    rows = [o for o in rows if any(n in index for n in ev.names(o))]
    lo = np.log([RANGES[kind_of(n)].lo for n in names])
    hi = np.log([RANGES[kind_of(n)].hi for n in names])
    center = np.log([prior_of(n) for n in names])
    ridge = np.asarray([RESIDUAL_SD / RANGES[kind_of(n)].prior_sd for n in names])
    sparsity = lil_matrix((len(rows) + len(names), len(names)), dtype=int)
    for i, o in enumerate(rows):
        for n in ev.names(o):
            if n in index:
                sparsity[i, index[n]] = 1
    for j in range(len(names)):
        sparsity[len(rows) + j, j] = 1

    base = dict(start or {})  # what is not refitted keeps its given value (its prior when none)
    lenders = measured_terms(ev, rows)

    def residuals(x: np.ndarray) -> np.ndarray:
        values = {**base, **{n: math.exp(v) for n, v in zip(names, x)}}
        return np.asarray([ev.residual(o, values, lenders) for o in rows] + list(ridge * (x - center)))

    starts = []
    if start:
        starts.append(np.log([start.get(n, prior_of(n)) for n in names]))
    for overrides in START_OVERRIDES:
        starts.append(np.log([overrides.get(kind_of(n), prior_of(n)) for n in names]))
    best = None
    for i, x0 in enumerate(starts):
        sol = _solve(residuals, np.clip(x0, lo + 1e-9, hi - 1e-9), lo, hi, sparsity)
        if best is None or sol.cost < best.cost:
            best = sol
        if start and i == 0:
            break  # a warm start (validation's run-out refits) is trusted
    for _ in range(POLISH_ROUNDS):  # restart from the best point until the cost stops falling
        assert best is not None
        again = _solve(residuals, best.x, lo, hi, sparsity)
        if again.cost >= best.cost * (1 - POLISH_TOLERANCE):
            break
        best = again
    assert best is not None
    return {n: float(math.exp(v)) for n, v in zip(names, best.x)}


def _solve(fun: Any, x0: np.ndarray, lo: np.ndarray, hi: np.ndarray, sparsity: Any) -> Any:
    return least_squares(
        fun,
        x0,
        bounds=(lo, hi),
        method="trf",
        jac_sparsity=sparsity,
        diff_step=DIFF_STEP,
        ftol=1e-5,
        xtol=1e-5,
        max_nfev=MAX_EVALUATIONS,
    )


def measured_terms(ev: Evaluator, rows: Iterable[Observation]) -> frozenset[str]:
    """The parameters a fitted measured row reads: the only fitted terms an unfitted expert-kernel
    term may borrow (factors.pooled; an Ascend SLO ceiling is not a measurement)."""
    return frozenset(n for o in rows if o.fit and o.kind != "targets" for n in ev.names(o))


def calibration_of(ev: Evaluator, values: dict[str, float], rows: Iterable[Observation]) -> Calibration:
    """A Calibration carrying the fitted values and what they were fitted to (bands come later)."""
    rows = [o for o in rows if o.fit]
    families = sorted({o.family for o in rows})
    return Calibration(
        values=dict(sorted(values.items())),
        references=tuple(sorted({o.reference_id for o in rows})),
        source="fit",
        measured_families=tuple(f for f in families if any(o.kind != "targets" for o in rows if o.family == f)),
        targets_only=tuple(f for f in families if all(o.kind == "targets" for o in rows if o.family == f)),
        family_stacks=tuple(sorted({family_stack(o.family, o.stack) for o in rows if o.kind != "targets"})),
        lenders=tuple(sorted(measured_terms(ev, rows))),
        # every term a fitted row reads, fitted or held at its prior by the budget: validation covers both
        fitted_stack_keys=tuple(
            sorted({n for o in rows for n in ev.names(o)} | {pipeline_key(o.stack.pp) for o in rows if o.stack.pp > 1})
        ),
    )


def fit_all(ev: Evaluator, rows: Iterable[Observation]) -> tuple[Calibration, Budget]:
    rows = [o for o in rows if o.fit]
    budget = free_parameters(ev, rows)
    values = fit(ev, rows, budget.free)
    return calibration_of(ev, values, rows), budget


def dof_table(budget: Budget) -> str:
    """Per family: independent runs, the parameters it fits (its shares), the budget runs / 3."""
    lines = [
        "degrees of freedom per family (a shared parameter counts by the family's share of its runs; "
        f"budget = runs / {DOF_RUNS_PER_PARAMETER:g})"
    ]
    for fam in sorted(budget.runs):
        own = [n for n in budget.free if fam in budget.families_of[n]]
        lines.append(
            f"  {fam:22} data points {budget.points[fam]:3d}, runs {budget.runs[fam]:3d}  "
            f"free parameters {budget.dof[fam]:5.2f} (of {len(own)} it informs) "
            f"<= budget {budget.runs[fam] / DOF_RUNS_PER_PARAMETER:5.2f}"
        )
    lines.append(f"  fitted: {', '.join(budget.free)}")
    lines.append(
        "  not fitted (over budget or fixed; an expert-kernel term borrows the terms of its weight format fitted to "
        "measured runs, "
        f"else its prior): {', '.join(budget.fixed) or '-'}"
    )
    return "\n".join(lines)
