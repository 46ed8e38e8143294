"""Parse what SGLang's bench_serving leaves behind, whatever its version.

Two sources, one result: a dict keyed by bench_serving's own JSONL names
(`output_throughput`, `median_ttft_ms`, `p99_itl_ms`, ...).

* the JSON line `--output-file` appends (preferred): keys come and go between versions and
  older clients write bare `Infinity`/`NaN` tokens, so loading is tolerant;
* the printed "Serving Benchmark Result" block (fallback, and the only form the cookbook
  pages publish): lines come and go between versions too, so unknown lines are ignored and missing
  ones are simply absent.

The printed-label -> key table was checked against SGLang 0.5.6.post1, 0.5.9 and 0.5.23
(see the header of params/references/speed-cookbook-k26-h200.yaml).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

BLOCK_TITLE = "Serving Benchmark Result"

LABEL_TO_KEY: dict[str, str] = {
    "backend": "backend",
    "traffic request rate": "request_rate",
    "max request concurrency": "max_concurrency",
    "successful requests": "completed",
    "benchmark duration (s)": "duration",
    "total input tokens": "total_input_tokens",
    "total input text tokens": "total_input_text_tokens",
    "total input vision tokens": "total_input_vision_tokens",
    "total generated tokens": "total_output_tokens",
    "total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "request throughput (req/s)": "request_throughput",
    "input token throughput (tok/s)": "input_throughput",
    "output token throughput (tok/s)": "output_throughput",
    "peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "peak concurrent requests": "max_concurrent_requests",
    "total token throughput (tok/s)": "total_throughput",
    "concurrency": "concurrency",
    "accept length": "accept_length",
}
"""Printed label (lower case, without the colon) -> JSONL key, for the non-latency lines."""

_LATENCY_LINE = re.compile(r"^(mean|median|std|max|min|p\d+(?:\.\d+)?)\s+(e2e latency|ttft|tpot|itl)\s*\(ms\)$")
_LATENCY_NAMES = {"e2e latency": "e2e_latency", "ttft": "ttft", "tpot": "tpot", "itl": "itl"}
_STRING_KEYS = {"backend", "dataset_name", "tag", "model_id", "tokenizer_id"}
_BARE_NONFINITE = re.compile(r"(?<=[:\[,])\s*(-?)(inf|infinity|nan)\s*(?=[,}\]])", re.IGNORECASE)


class BenchParseError(ValueError):
    """Text that holds neither a bench_serving JSON line nor a printed result block."""


def label_key(label: str) -> str | None:
    """JSONL key for a printed label ("Median TTFT (ms)" -> "median_ttft_ms"), None if unknown."""
    text = " ".join(label.strip().rstrip(":").split()).lower()
    if text in LABEL_TO_KEY:
        return LABEL_TO_KEY[text]
    match = _LATENCY_LINE.match(text)
    if match:
        stat, metric = match.groups()
        return f"{stat.replace('.', '_')}_{_LATENCY_NAMES[metric]}_ms"
    return None


def _number(text: str) -> Any:
    raw = text.strip().replace(",", "")
    low = raw.lower()
    if low in ("inf", "+inf", "infinity"):
        return math.inf
    if low in ("nan",):
        return math.nan
    if low in ("not set", "none", "null", ""):
        return None
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw


def parse_block(text: str) -> dict[str, Any]:
    """The last printed "Serving Benchmark Result" block in `text` -> dict of JSONL keys."""
    start = text.rfind(BLOCK_TITLE)
    if start < 0:
        raise BenchParseError(
            f"no '{BLOCK_TITLE}' block found. Fix: pass the full bench_serving output "
            "(stdout) or its --output-file JSON line."
        )
    result: dict[str, Any] = {}
    for line in text[start:].splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("=") and set(stripped) == {"="}:
            break  # the closing rule of the block
        if ":" not in stripped:
            continue  # section rules such as ----Time to First Token----
        label, _, value = stripped.partition(":")
        key = label_key(label)
        if key is None:
            continue  # a line this parser does not know: tolerated
        result[key] = value.strip() if key in _STRING_KEYS else _number(value)
    if not result:
        raise BenchParseError(f"the '{BLOCK_TITLE}' block has no recognisable lines")
    return result


def _loads(line: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError:
        # bare inf / nan spelled some other way than Python's Infinity / NaN
        fixed = _BARE_NONFINITE.sub(
            lambda m: ("-" if m.group(1) else "") + ("NaN" if m.group(2).lower() == "nan" else "Infinity"),
            line,
        )
        return json.loads(fixed)


def clean_metrics(row: dict[str, Any]) -> dict[str, Any]:
    """Scalar keys only (drop server_info and per-request arrays); "inf" strings -> float."""
    out: dict[str, Any] = {}
    info = row.get("server_info")
    if isinstance(info, dict) and info.get("emulated"):
        out["emulated"] = True  # the emulator says so in /server_info; keep that label
    for key, value in row.items():
        if isinstance(value, (dict, list, tuple)):
            continue
        if isinstance(value, str) and key not in _STRING_KEYS:
            value = _number(value)
        out[key] = value
    return out


def parse_jsonl_text(text: str) -> list[dict[str, Any]]:
    """Every JSON object line of a bench_serving --output-file (torn/other lines skipped)."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            obj = _loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            rows.append(clean_metrics(obj))
    return rows


def parse_result_text(text: str) -> dict[str, Any]:
    """One bench_serving result from its JSONL (last line wins) or its printed block."""
    rows = parse_jsonl_text(text)
    if rows:
        return rows[-1]
    return parse_block(text)
