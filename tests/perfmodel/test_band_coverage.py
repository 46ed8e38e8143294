"""Band coverage (issue 26 item 3): a held-out result counts as inside only when it lies in the band a
user would have been shown for it, sized from the OTHER pages' errors (never its own), per family and
per stack, beside the median |error|."""

from __future__ import annotations

import math
from typing import Any

from kimi_runbooks.perfmodel.observations import Observation
from kimi_runbooks.perfmodel.stack import Stack
from kimi_runbooks.perfmodel.validation import Check, coverage, format_coverage, honest_band


def _obs(family: str, page: str, metric: str = "median_tpot_ms", stack: Stack | None = None) -> Observation:
    scenario: Any = None  # coverage never reads the scenario
    return Observation(
        page, "speed", "h200", family, "s1", {}, scenario, metric, 10.0, document=page, stack=stack or Stack()
    )


def test_a_page_never_sizes_its_own_band() -> None:
    # page p1 is 2x off; the other pages are within 5%: p1's band comes from them and excludes p1
    far = Check(_obs("a", "p1"), 20.0, "page-out", basis="borrowed")
    near = [Check(_obs("b", f"q{i}"), 10.0 * (1 + 0.01 * i), "page-out", basis="borrowed") for i in range(-5, 6)]
    lo, hi = honest_band(far, [far, *near], [])
    assert hi < math.log(2.0) and lo < 0.01
    cov = coverage([far, *near], [far, *near], [])
    assert cov["all"]["median_tpot_ms"]["rows"] == 12
    assert cov["family a"]["median_tpot_ms"]["inside"] == 0
    assert cov["family a"]["median_tpot_ms"]["median_abs_error"] == 1.0


def test_an_unfitted_stack_is_judged_by_its_widened_band_and_grouped_by_stack() -> None:
    flydsl = Stack(moe_path="flydsl", precision="W4A8")
    rows = [Check(_obs("b", f"q{i}"), 10.0 * (1 + 0.1 * i), "page-out", basis="borrowed") for i in range(-3, 4)]
    odd = Check(_obs("a", "p1", stack=flydsl), 13.5, "page-out", basis="unfitted-stack")
    lo, hi = honest_band(odd, [odd, *rows], [])
    plain = honest_band(Check(odd.obs, 13.5, "page-out", basis="borrowed"), [odd, *rows], [])
    assert (lo, hi) == (1.5 * plain[0], 1.5 * plain[1])
    cov = coverage([odd, *rows], [odd, *rows], [])
    assert "stack flydsl:W4A8" in cov and cov["stack flydsl:W4A8"]["median_tpot_ms"]["inside"] == 1
    text = format_coverage(cov, "page out")
    assert "stack flydsl:W4A8" in text and "in-band" in text and "~80%" in text


def test_metrics_outside_the_headline_and_failed_predictions_are_not_counted() -> None:
    ttft, broken = _obs("h", "p1", metric="median_ttft_ms"), _obs("h", "p2")
    cov = coverage([Check(ttft, 10.0, "page-out"), Check(broken, float("nan"), "page-out")], [], [])
    assert cov == {}
    assert "(no results)" in format_coverage(cov, "held out")
