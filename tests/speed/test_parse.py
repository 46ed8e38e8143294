"""bench_serving output -> JSONL-keyed dict, for every printed block of the seeds and odd JSONL."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml

from kimi_runbooks import speed
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.speed.parse import label_key

ROOT = REPO_ROOT
BLOCKS = sorted((ROOT / "tests" / "fixtures" / "bench_blocks").glob("*.txt"))
REFS = ROOT / "params" / "references"


def _reference_metrics() -> dict[str, dict]:
    """fixture file name -> the metrics transcribed in params/references for that block."""
    out = {}
    for path in REFS.glob("speed-*.yaml"):
        doc = yaml.safe_load(path.read_text())
        for result in doc.get("results") or []:
            out[Path(result["fixture"]).name] = result["metrics"]
    return out


def _printed_pairs(text: str) -> list[tuple[str, str]]:
    """(label, raw value) of every `Label: value` line inside the block, independent of the parser."""
    body = text[text.index("Serving Benchmark Result") :].splitlines()[1:]
    return [
        (m.group(1).strip(), m.group(2).strip())
        for line in body
        if (m := re.match(r"^([^:=-][^:]*):\s*(\S.*)$", line.strip()))
    ]


def _same(parsed, expected) -> bool:
    if isinstance(expected, str) and expected.lower() == "inf":
        return parsed == math.inf
    if expected is None:
        return parsed is None
    if isinstance(expected, str):
        return parsed == expected
    return parsed == pytest.approx(expected, abs=1e-9)


def test_fixtures_present():
    assert len(BLOCKS) >= 12, "expected the seeds' printed blocks under tests/fixtures/bench_blocks"


@pytest.mark.parametrize("path", BLOCKS, ids=lambda p: p.stem)
def test_every_printed_value_is_parsed(path: Path):
    text = path.read_text()
    parsed = speed.parse_result_text(text)
    pairs = _printed_pairs(text)
    assert pairs, "fixture has no label lines"
    for label, raw in pairs:
        key = label_key(label)
        assert key is not None, f"label {label!r} has no JSONL key"
        expected: object = raw
        if raw.lower() == "inf":
            expected = "inf"
        elif raw == "not set":
            expected = None
        elif re.fullmatch(r"-?\d+", raw):
            expected = int(raw)
        elif re.fullmatch(r"-?\d+\.\d*", raw):
            expected = float(raw)
        assert _same(parsed[key], expected), f"{label}: parsed {parsed[key]!r}, printed {raw!r}"
    assert len(parsed) == len(pairs)


@pytest.mark.parametrize("path", BLOCKS, ids=lambda p: p.stem)
def test_parsed_block_equals_reference_yaml(path: Path):
    refs = _reference_metrics()
    assert path.name in refs, f"{path.name} is not cited by any params/references/speed-*.yaml"
    parsed = speed.parse_result_text(path.read_text())
    expected = refs[path.name]
    assert set(parsed) == set(expected)
    for key, value in expected.items():
        assert _same(parsed[key], value), f"{key}: parsed {parsed[key]!r}, reference {value!r}"


def test_block_tolerates_missing_extra_and_reordered_lines():
    text = BLOCKS[0].read_text()
    lines = text.splitlines()
    kept = [row for row in lines if not row.startswith(("Median TTFT", "Backend"))]
    kept.insert(3, "Some future line (ms):                 12.5")
    kept.insert(4, "P95 TTFT (ms):                 321.0")
    parsed = speed.parse_result_text("noise before\n" + "\n".join(kept) + "\ntrailing noise: 3\n")
    assert "median_ttft_ms" not in parsed and "backend" not in parsed
    assert parsed["p95_ttft_ms"] == 321.0
    assert "trailing noise" not in " ".join(parsed)
    assert parsed["mean_ttft_ms"] == speed.parse_result_text(text)["mean_ttft_ms"]


def test_last_block_wins_and_garbage_fails_clearly():
    a = BLOCKS[0].read_text()
    b = BLOCKS[1].read_text()
    assert speed.parse_result_text(a + "\n" + b) == speed.parse_result_text(b)
    with pytest.raises(speed.BenchParseError, match="Fix"):
        speed.parse_result_text("Traceback: nothing here")


def test_jsonl_old_and_new_versions():
    old = (
        '{"backend": "sglang", "request_rate": Infinity, "max_concurrency": null, "completed": 10, '
        '"output_throughput": 61.3, "median_ttft_ms": 158.28, "std_ttft_ms": NaN}'
    )
    new = json.dumps(
        {
            "backend": "sglang",
            "request_rate": "inf",
            "completed": 8,
            "p95_ttft_ms": 1.5,
            "server_info": {"emulated": True, "max_total_num_tokens": 5},
            "itls": [[1, 2]],
        }
    )
    torn = '{"backend": "sgl'
    rows = speed.parse_jsonl_text("\n".join([old, new, torn, "not json"]))
    assert len(rows) == 2
    assert rows[0]["request_rate"] == math.inf and math.isnan(rows[0]["std_ttft_ms"])
    assert rows[0]["max_concurrency"] is None and rows[0]["median_ttft_ms"] == 158.28
    assert rows[1]["request_rate"] == math.inf and rows[1]["emulated"] is True
    assert "server_info" not in rows[1] and "itls" not in rows[1]
    assert speed.parse_result_text(old + "\n" + new)["completed"] == 8  # last line wins
    assert speed.parse_result_text('{"request_rate": inf, "completed": 1}')["request_rate"] == math.inf


def test_load_results_from_raw_jsonl_and_block(tmp_path):
    raw = tmp_path / "raw.jsonl"
    raw.write_text(
        '{"completed": 3, "output_throughput": 80.0, "total_throughput": 160.0, '
        '"median_tpot_ms": 20.0, "request_rate": Infinity}\n'
    )
    df = speed.load_results(raw, devices=8)
    assert df.loc[0, "tok_s_per_user"] == pytest.approx(50.0)
    assert df.loc[0, "output_tok_s_per_gpu"] == pytest.approx(10.0)
    assert df.loc[0, "total_tok_s_per_gpu"] == pytest.approx(20.0)
    assert df.loc[0, "label"] == "measured"
    block = tmp_path / "out.txt"
    block.write_text(BLOCKS[2].read_text())
    df2 = speed.load_results(block)
    assert df2.loc[0, "tok_s_per_user"] == pytest.approx(1000 / df2.loc[0, "median_tpot_ms"])
    with pytest.raises(FileNotFoundError, match="Fix"):
        speed.load_results(tmp_path / "nope")
