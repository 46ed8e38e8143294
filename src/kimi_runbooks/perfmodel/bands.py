"""The band around a prediction: where a measurement should fall, sized from validation errors."""

from __future__ import annotations

import math
from typing import Protocol

from .store import Calibration


class Banded(Protocol):
    """What a band is put on (predict.Prediction): its basis, and low and high by figure name."""

    family: str
    calibration_basis: str
    pages: int
    low: dict[str, float]
    high: dict[str, float]


LATENCY_BAND = {
    "median_ttft_ms": "median_ttft_ms",
    "median_tpot_ms": "median_tpot_ms",
    "median_itl_ms": "median_tpot_ms",
}
RATE_BAND = {
    "output_throughput": "output_throughput",
    "total_throughput": "output_throughput",
    "output_tok_s_per_device": "output_throughput",
    "tok_s_per_user": "median_tpot_ms",
}


def apply_band(p: Banded, cal: Calibration, shape_widening: float = 1.0) -> None:
    """Published = predicted / exp(err): the err quantiles give where a measurement should
    fall, from the page-out errors of results predicted with as many pages behind them (the support
    tier, store.SUPPORT_TIERS). The band is widened to hold the estimate itself when validation found the model
    biased one way (TTFT of a never-calibrated family lands above it), and for a shape no
    published measurement checks (shape_basis.UNVALIDATED_SHAPE_BAND_WIDENING)."""
    for name, metric in {**LATENCY_BAND, **RATE_BAND}.items():
        value = getattr(p, name)
        sized = cal.support_band(metric, p.pages, p.calibration_basis)
        if sized is None:  # a calibration written before bands were sized by support
            sized = cal.band_for(metric, p.calibration_basis, p.family)
        lo_err, hi_err = (e * shape_widening for e in sized)
        if name == "tok_s_per_user":  # inverse of TPOT: the TPOT band flips
            lo_err, hi_err = -hi_err, -lo_err
        p.low[name] = min(value * math.exp(-hi_err), value)
        p.high[name] = max(value * math.exp(-lo_err), value)
