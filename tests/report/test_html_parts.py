"""The report's building blocks: typed cells (numbers right, text left), no <NA>/None/nan, and
structured or long values folded into <details>, never spilled into a cell."""

from __future__ import annotations

import math

import pandas as pd

from kimi_runbooks.report.html_parts import Column, fmt_number, table, text_cell


def test_numbers_are_right_aligned_with_sensible_precision() -> None:
    html = table(
        [Column("x", "tok/s", "num"), Column("n", "n", "int"), Column("name", "name")],
        [{"x": 1234.567, "n": 12.0, "name": "a"}, {"x": 0.123456, "n": None, "name": None}],
    )
    assert '<td class="r">1,235</td>' in html and '<td class="r">0.12</td>' in html
    assert '<td class="r">12</td>' in html and '<td class="l">a</td>' in html
    assert "None" not in html and "nan" not in html.lower() and "NA" not in html


def test_missing_values_are_a_dash_never_na_or_none() -> None:
    for value in (None, math.nan, pd.NA, float("nan")):
        assert fmt_number(value) == "–"
        assert text_cell(value) == "–"


def test_structures_and_long_text_fold_into_details() -> None:
    folded = text_cell({"samples": "/very/long/path/" + "x" * 100})
    assert folded.startswith("<details>") and "samples" in folded
    long_path = text_cell("/opt/" + "y" * 200)
    assert long_path.startswith("<details>")
    assert text_cell("short text") == "short text"


def test_text_is_escaped() -> None:
    assert "&lt;script&gt;" in table([Column("t", "t")], [{"t": "<script>x</script>"}])
