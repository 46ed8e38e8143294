"""Fit the efficiency factors on the published results.

Least squares on log(predicted / published) over the fit observations (observations.py:
measured rows weigh 1, tight Ascend SLO targets 0.5), one platform family at a time: the seven
factors (logs; an efficiency is capped at 1, a fraction of a peak) with a ridge towards
factors.PRIOR (PRIOR_SD per factor), so what a family's rows do not pin down stays at the
prior. Solver: scipy least_squares from several starting points (START_GRID), best kept.

A family without data of its own uses the GLOBAL factors: the median over fitted families of the
factors every stack shares (TRANSFERRED), the prior for the stack-specific ones, and the
expert-kernel factors (KERNEL_FACTORS) of the families that run the same weight format, when
there are any (the MoE kernel path follows the checkpoint).

Families are fitted independently, so validation (validation.py) refits only the family that
lost rows. Command: `python -m kimi_runbooks.perfmodel calibrate [--write]`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from scipy.optimize import least_squares

from ._deps import Catalog, plan
from .factors import FACTOR_NAMES, PRIOR, Factors
from .observations import Observation
from .predict import Prediction, Predictor
from .store import Calibration

PRIOR_SD = {  # log-sd of each factor around factors.PRIOR: what the rows do not pin down stays put
    "overhead_us": 1.5,
    "eta_bw": 0.5,
    "eta_moe": 1.5,
    "eta_attn": 1.0,
    "attn_ns_per_token": 2.0,
    "eta_gemm": 2.0,
    "eta_prefill": 1.5,
}
"""Dense weight streaming is well understood (tight prior on eta_bw); expert kernels, attention
latency and small-batch GEMMs are where software stacks differ by 10x (wide priors)."""
KERNEL_FACTORS = ("eta_moe", "eta_gemm", "eta_prefill")
TRANSFERRED = ("overhead_us", "eta_bw")
"""What a family without results borrows from the fitted families (their median): the fixed cost
per layer and the dense weight-streaming efficiency, which every stack has. The other factors
belong to one software stack's kernels (attention backend, expert GEMMs, decode GEMMs, prefill)
and differ by 10x or more between the fitted families (eta_moe 0.03 to 0.93, attn_ns_per_token
1 to 48): their median carries one stack's quirks into another, so a new family keeps the
first-principles prior for them, except the expert-kernel factors of its weight format when a
fitted family runs that format (KERNEL_FACTORS, the MoE kernel path follows the checkpoint).
Chosen over the median of every factor by the leave-one-document-out table (benchmarks/
perfmodel_loo.py): 18%/23% against 46%/34% median |error| of TPOT/output throughput when it was
chosen (five documents); 24%/22% with the MI300X blog added as a second AMD document."""
RESIDUAL_SD = 0.25  # typical log error of one row; with PRIOR_SD sets the ridge weights
MISSING_RESIDUAL = 5.0  # a prediction that cannot be made (no KV room) counts as a big miss
MAX_EVALUATIONS = 300
DIFF_STEP = 1e-3  # relative finite-difference step of the Jacobian
START_GRID: tuple[dict[str, float], ...] = (
    {},
    {"eta_gemm": 0.005},
    {"eta_moe": 0.05},
    {"attn_ns_per_token": 30.0},
    {"eta_gemm": 0.005, "attn_ns_per_token": 30.0},
)
"""Starting points: the batch cost of a decode step can come from the expert kernels (eta_moe)
or from compute (eta_gemm), the context cost from the batch's KV traffic or from one request's
attention latency; a local solver has to be started near each."""


def factors_of(params: np.ndarray) -> Factors:
    return Factors.from_params(list(params))


def metric_value(p: Prediction, metric: str) -> float:
    return float(getattr(p, metric))


class Evaluator:
    """Predicts observations under trial factors; plans are built once per launch config."""

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

    def weight_format(self, o: Observation) -> str:
        return self._predictors[self._key(o)].plan.model.weight_format

    def predict(self, o: Observation, factors: Factors) -> Prediction:
        predictor = self._predictors[self._key(o)]
        predictor.factors = factors
        return predictor.predict(o.scenario)

    def value(self, o: Observation, factors: Factors) -> float:
        return metric_value(self.predict(o, factors), o.metric)

    def residual(self, o: Observation, factors: Factors) -> float:
        value = self.value(o, factors)
        ok = math.isfinite(value) and value > 0
        return math.sqrt(o.weight) * (math.log(value / o.published) if ok else MISSING_RESIDUAL)


def fit_family(ev: Evaluator, rows: list[Observation]) -> np.ndarray:
    """One family's factor parameters from its fit rows (multi-start least squares)."""
    rows = [o for o in rows if o.fit]
    center = np.asarray(PRIOR.as_params())
    ridge = np.asarray([RESIDUAL_SD / PRIOR_SD[n] for n in FACTOR_NAMES])

    def residuals(x: np.ndarray) -> np.ndarray:
        f = factors_of(x)
        return np.asarray([ev.residual(o, f) for o in rows] + list(ridge * (x - center)))

    best = None
    for overrides in START_GRID:
        x0 = np.asarray(Factors(**{**PRIOR.as_dict(), **overrides}).as_params())
        sol = least_squares(
            residuals, x0, diff_step=[DIFF_STEP] * len(x0), ftol=1e-6, xtol=1e-6, max_nfev=MAX_EVALUATIONS
        )
        if best is None or sol.cost < best.cost:
            best = sol
    assert best is not None
    return np.asarray(best.x)


def transferred_global(family_params: list[np.ndarray]) -> np.ndarray:
    """The factors of a family without results of its own: the median over the fitted families
    of the TRANSFERRED factors, the prior (factors.PRIOR) for the rest."""
    prior = np.asarray(PRIOR.as_params())
    if not family_params:
        return prior
    median = np.median(family_params, axis=0)
    return np.asarray([m if n in TRANSFERRED else p for n, m, p in zip(FACTOR_NAMES, median, prior)])


def combine(ev: Evaluator, params: dict[str, np.ndarray], rows: Iterable[Observation]) -> Calibration:
    """Family factors plus the global and per-weight-format medians a new family borrows."""
    rows = [o for o in rows if o.fit]
    families = sorted(params)
    glob = transferred_global([params[f] for f in families])
    formats: dict[str, list[np.ndarray]] = {}
    family_formats: dict[str, tuple[str, ...]] = {}
    for fam in families:
        family_formats[fam] = tuple(sorted({ev.weight_format(o) for o in rows if o.family == fam}))
        for fmt in family_formats[fam]:
            formats.setdefault(fmt, []).append(params[fam])
    by_format = {
        fmt: {n: getattr(factors_of(np.median(v, axis=0)), n) for n in KERNEL_FACTORS} for fmt, v in formats.items()
    }
    return Calibration(
        global_factors=factors_of(glob),
        families={fam: factors_of(v) for fam, v in params.items()},
        by_format=by_format,
        references=tuple(sorted({o.reference_id for o in rows})),
        source="fit",
        family_formats=family_formats,
        targets_only=tuple(fam for fam in families if all(o.kind == "targets" for o in rows if o.family == fam)),
    )


def fit_all(ev: Evaluator, rows: Iterable[Observation]) -> tuple[Calibration, dict[str, np.ndarray]]:
    rows = [o for o in rows if o.fit]
    params = {fam: fit_family(ev, [o for o in rows if o.family == fam]) for fam in sorted({o.family for o in rows})}
    return combine(ev, params, rows), params
