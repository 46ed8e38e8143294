"""Bands that decide (issue 43 items 1-2): a result's band is its support tier's (two or more pages of its
family and stack / one page / first principles), sized from the OTHER pages' page-out errors only (never
its own); coverage, sharpness (median high/low) and median |error| per family and per stack weigh each
page once, so one dense matrix cannot carry the figure."""

from __future__ import annotations

import math
from typing import Any

import pytest

from kimi_runbooks.perfmodel.observations import Observation
from kimi_runbooks.perfmodel.stack import Stack
from kimi_runbooks.perfmodel.store import MIN_TIER_ROWS, support_text, support_tier
from kimi_runbooks.perfmodel.validation import (
    Check,
    coverage,
    format_coverage,
    honest_band,
    sharpness,
    support_bands,
    weighted_quantile,
)


def _obs(family: str, page: str, metric: str = "median_tpot_ms", stack: Stack | None = None) -> Observation:
    scenario: Any = None  # coverage never reads the scenario
    return Observation(
        page, "speed", "h200", family, "s1", {}, scenario, metric, 10.0, document=page, stack=stack or Stack()
    )


def _check(family: str, page: str, ratio: float, pages: int = 0, basis: str = "borrowed", **kw: Any) -> Check:
    return Check(_obs(family, page, **kw), 10.0 * ratio, "page-out", basis=basis, pages=pages)


def test_a_page_never_sizes_its_own_band() -> None:
    # page p1 is 2x off; the other pages are within 5%: p1's band comes from them and excludes p1
    far = _check("a", "p1", 2.0)
    near = [_check("b", f"q{i}", 1 + 0.01 * i) for i in range(-5, 6)]
    lo, hi = honest_band(far, [far, *near])
    assert hi < math.log(2.0) and lo < 0.01
    cov = coverage([far, *near], [far, *near])
    assert cov["all"]["median_tpot_ms"]["rows"] == 12
    assert cov["family a"]["median_tpot_ms"]["inside"] == 0
    assert cov["family a"]["median_tpot_ms"]["median_abs_error"] == 1.0


def test_the_band_is_sized_by_what_stands_behind_the_result() -> None:
    # results with two pages behind them erred within 5%, those with none up to 2x: each tier its own band
    agreed = [_check("a", f"a{i}", 1 + 0.01 * i, pages=2) for i in range(-5, 6)]
    alone = [_check("b", f"b{i}", 1 + 0.1 * i, pages=0) for i in range(-5, 6)]
    bands = support_bands([*agreed, *alone])
    narrow, wide = bands["pages"]["median_tpot_ms"], bands["first principles"]["median_tpot_ms"]
    assert narrow[1] - narrow[0] < 0.1 < wide[1] - wide[0]
    assert wide[0] <= narrow[0] and wide[1] >= narrow[1]  # less support never reads as more certain
    assert bands["one page"]["median_tpot_ms"] == wide  # no one-page errors: it borrows the wider tier
    new = _check("a", "new", 1.0, pages=2)
    assert honest_band(new, [*agreed, *alone]) == pytest.approx(narrow)
    assert honest_band(_check("a", "new", 1.0, pages=0), [*agreed, *alone]) == pytest.approx(wide)
    # an architecture no fitted result has: the widest tier widened (a judgement, said in the output)
    fp = _check("k3", "new", 1.0, pages=0, basis="first-principles")
    assert honest_band(fp, [*agreed, *alone]) == pytest.approx((2 * wide[0], 2 * wide[1]))


def test_a_tier_with_too_few_errors_borrows_the_wider_one() -> None:
    few = [_check("a", f"a{i}", 1.0, pages=1) for i in range(MIN_TIER_ROWS - 1)]
    rest = [_check("b", f"b{i}", 1 + 0.1 * i, pages=0) for i in range(-5, 6)]
    bands = support_bands([*few, *rest])
    assert bands["one page"]["median_tpot_ms"] == bands["first principles"]["median_tpot_ms"]


def test_each_page_weighs_once_in_coverage_sharpness_and_error() -> None:
    # one page of 15 rows all on target, two pages of one row each 3x off: the two pages are two of three voices
    dense = [_check("rtx", "matrix", 1.0) for _ in range(15)]
    off = [_check("amd", "blog1", 3.0), _check("amd", "blog2", 3.0)]
    cov = coverage([*dense, *off], [*dense, *off])
    assert cov["all"]["median_tpot_ms"]["rows"] == 17 and cov["all"]["pages"] == 3
    assert cov["all"]["median_tpot_ms"]["median_abs_error"] == pytest.approx(2.0)  # 2 of 3 pages are 200% off
    assert cov["family rtx"]["pages"] == 1 and cov["family amd"]["pages"] == 2
    assert cov["all"]["median_tpot_ms"]["sharpness"] >= 1.0
    text = format_coverage(cov, "page out")
    assert "single source" in text and "2 pages" in text and "x" in text and "in-band" in text


def test_sharpness_is_high_over_low_of_the_band_that_holds_the_estimate() -> None:
    assert sharpness(-0.5, 0.5) == pytest.approx(math.e)
    assert sharpness(0.2, 0.4) == pytest.approx(math.exp(0.4))  # the shown band always holds the estimate
    assert weighted_quantile([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], 0.5) == 2.0
    assert weighted_quantile([1.0, 100.0], [3.0, 1.0], 0.5) < 50.0  # the heavier voice pulls the median


def test_the_output_says_what_sizes_the_band() -> None:
    assert [support_text(n) for n in (3, 2, 1, 0)] == [
        "3 pages, same stack",
        "2 pages, same stack",
        "one page",
        "first principles",
    ]
    assert support_tier(5) == "pages"


def test_metrics_outside_the_headline_and_failed_predictions_are_not_counted() -> None:
    ttft, broken = _obs("h", "p1", metric="median_ttft_ms"), _obs("h", "p2")
    cov = coverage([Check(ttft, 10.0, "page-out"), Check(broken, float("nan"), "page-out")], [])
    assert cov == {}
    assert "(no results)" in format_coverage(cov, "held out")
