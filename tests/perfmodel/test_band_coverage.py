"""Band coverage (issue 26 item 3): a held-out result counts as inside only when it lies in the band
a user is shown for it, which is the family's band when the family keeps other fitted pages and
the new-family band when it does not."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from kimi_runbooks.perfmodel.observations import Observation
from kimi_runbooks.perfmodel.validation import Check, band_coverage, format_coverage


def _obs(family: str, page: str, published: float = 10.0, metric: str = "median_tpot_ms") -> Observation:
    scenario: Any = None  # band_coverage never reads the scenario
    return Observation(page, "speed", "h200", family, "s1", {}, scenario, metric, published, document=page)


class _Cal:
    """A family band of +-10% and a new-family band of +-100% (in log error)."""

    def validated(self, family: str, weight_format: str | None = None) -> bool:
        return True

    def band_for(self, metric: str, calibrated: bool = False, family: str | None = None) -> tuple[float, float]:
        return (-0.1, 0.1) if calibrated else (-1.0, 1.0)


def test_a_row_is_judged_by_the_band_its_family_would_show() -> None:
    near, far, alone = _obs("hopper", "p1"), _obs("hopper", "p2"), _obs("amd", "p3")
    ev: Any = SimpleNamespace(obs=[near, far, alone])
    checks = [
        Check(near, 10.5, "page-out"),  # +5%: inside the family's +-10%
        Check(far, 15.0, "page-out"),  # +50%: outside the family's band (hopper keeps page p1)
        Check(alone, 15.0, "page-out"),  # +50%: amd has no other page, so the wide band applies
    ]
    cov = band_coverage(checks, _Cal(), ev)  # type: ignore[arg-type]
    assert cov["all"] == {"median_tpot_ms": (2, 3)}
    assert cov["hopper"] == {"median_tpot_ms": (1, 2)} and cov["amd"] == {"median_tpot_ms": (1, 1)}
    text = format_coverage(cov, "page out")
    assert "median_tpot_ms 2/3 (67%)" in text and "~80%" in text


def test_metrics_outside_the_headline_and_failed_predictions_are_not_counted() -> None:
    ttft, broken = _obs("hopper", "p1", metric="median_ttft_ms"), _obs("hopper", "p2")
    ev: Any = SimpleNamespace(obs=[ttft, broken])
    cov = band_coverage([Check(ttft, 10.0, "page-out"), Check(broken, float("nan"), "page-out")], _Cal(), ev)  # type: ignore[arg-type]
    assert cov == {}
