"""Contract: the emulator's prefix cache reports and matches as SGLang 0.5.23 does (issue 28 item 1).

One emulator with ``--enable-cache-report`` serves a conversation twice on each route; what it
answered (usage, the sglext chunk and field, /generate meta_info, the cache metrics) and a
random insert / match / evict sequence run through its radix tree are captured here, and
tests/contract/prefix_cache_check.py, run by the bench tool env's python, recomputes each with
SGLang's own classes (UsageProcessor, SchedulerOutputStreamer.get_cached_tokens_details, SglExt,
ChatCompletionStreamResponse / CompletionStreamResponse, the metric collectors, RadixCache).

Heavy: needs the bench tool env. Skipped without it; with CI=true a missing env is a failure.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import run_in_bench_env
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.deviations import DEVIATIONS
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.radix import PrefixCache
from kimi_runbooks.emulator.testing import emulator_server

pytestmark = pytest.mark.heavy
MODEL = "moonshotai/Kimi-K2.6"
FAST = LatencyProfile(ttft_base_ms=1.0, ttft_per_1k_input_ms=1.0, itl_base_ms=0.5, itl_per_running_ms=0.0)
MESSAGES = [
    {"role": "system", "content": "You are a coding agent working in a large repository. " * 40},
    {"role": "user", "content": "Find the failing test and fix it."},
]


def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]


def _meta(usage: dict[str, Any]) -> dict[str, Any]:
    details = usage.get("prompt_tokens_details") or {}
    return {
        "prompt_tokens": usage["prompt_tokens"],
        "completion_tokens": usage["completion_tokens"],
        "reasoning_tokens": usage.get("reasoning_tokens") or 0,
        "cached_tokens": details.get("cached_tokens", 0),
    }


def _served(url: str, report: bool) -> dict[str, list[dict[str, Any]]]:
    """Each route twice (a miss, then hits). The cached count a chunk or sglext is checked with: 0 for
    the server's first request; else what the same response reported (usage with the report flag,
    else its sglext): the count itself is the radix cases' and the unit tests' business."""
    out: dict[str, list[dict[str, Any]]] = {"usage": [], "sglext_chunks": [], "sglext_whole": []}
    chat = {"model": MODEL, "messages": MESSAGES, "max_tokens": 16, "return_cached_tokens_details": True}
    completion = {"model": MODEL, "prompt": "def add(a, b):\n    return a + b\n" * 30, "max_tokens": 8}
    completion["return_cached_tokens_details"] = True
    first = True

    def claimed(usage: dict[str, Any], ext: dict[str, Any] | None) -> int:
        nonlocal first
        if first:
            first = False
            return 0
        if report:
            return int(usage["prompt_tokens_details"]["cached_tokens"])
        return int((ext or {}).get("sglext", ext or {}).get("cached_tokens_details", {}).get("device", 0))

    with httpx.Client(base_url=url, timeout=30) as http:
        for turn in ("first", "again"):
            tag = f"{'report' if report else 'no-report'}-{turn}"
            whole = http.post("/v1/chat/completions", json=chat).json()
            out["usage"].append(_usage_case(f"chat-{tag}", whole["usage"], report, "whole"))
            cached = claimed(whole["usage"], {"sglext": whole.get("sglext") or {}})
            out["sglext_whole"].append({"name": f"chat-{tag}", "cached": cached, "emulator": whole.get("sglext")})
            for route, path, body in (
                ("chat", "/v1/chat/completions", chat),
                ("completion", "/v1/completions", completion),
            ):
                if route == "completion":
                    done = http.post(path, json=body).json()
                    out["usage"].append(_usage_case(f"completion-{tag}", done["usage"], report, "whole"))
                with http.stream("POST", path, json={**body, "stream": True, **_USAGE}) as r:
                    chunks = _sse(r)
                kind = "stream" if route == "completion" else "whole"
                out["usage"].append(_usage_case(f"{route}-stream-{tag}", chunks[-1]["usage"], report, kind))
                ext = [c for c in chunks if "sglext" in c]
                cached = claimed(chunks[-1]["usage"], ext[0] if ext else None)
                out["sglext_chunks"].append(_chunk_case(f"{route}-stream-{tag}", route, chunks[-1], cached, ext))
    return out


_USAGE = {"stream_options": {"include_usage": True}}


def _usage_case(name: str, usage: dict[str, Any], report: bool, kind: str) -> dict[str, Any]:
    meta = _meta(usage)
    if not report:  # the cached count is not in usage: take it as 0 or as the hit; SGLang must drop it either way
        meta["cached_tokens"] = usage["prompt_tokens"] - 1
    return {
        "name": name,
        "kind": kind,
        "report": report,
        "exclude_none": kind == "stream",
        "meta": meta,
        "emulator": usage,
    }


def _chunk_case(name: str, route: str, last: dict[str, Any], cached: int, ext: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": name,
        "route": route,
        "id": last["id"],
        "created": last["created"],
        "model": last["model"],
        "cached": cached,
        "emulator": ext[0] if ext else None,
    }


def _radix_ops(seed: int, page_size: int) -> list[tuple[str, Any]]:
    rng = random.Random(seed)
    stems = [[rng.randrange(50) for _ in range(rng.randrange(1, 300))] for _ in range(6)]
    ops: list[tuple[str, Any]] = []
    for _ in range(120):
        stem = rng.choice(stems)
        ids = stem[: rng.randrange(0, len(stem) + 1)] + [rng.randrange(50) for _ in range(rng.randrange(0, 80))]
        roll = rng.random()
        ops.append(("insert", ids) if roll < 0.45 else ("match", ids) if roll < 0.9 else ("evict", rng.randrange(300)))
    return ops


def _radix_case(name: str, page_size: int, seed: int) -> dict[str, Any]:
    ops = _radix_ops(seed, page_size)
    cache = PrefixCache(page_size=page_size)
    results: list[Any] = []
    for op, arg in ops:
        if op == "insert":
            cache.insert(arg)
            results.append(["insert", cache.held])
        elif op == "match":
            results.append(["match", cache.match(arg)[0]])
        else:
            cache.evict(arg)
            results.append(["evict", cache.held])
    return {"name": name, "page_size": page_size, "ops": ops, "emulator": results}


def test_prefix_cache_reports_and_matches_as_sglang(bench_python: str, tmp_path: Path) -> None:
    captured: dict[str, Any] = {"model": MODEL, "usage": [], "sglext_chunks": [], "sglext_whole": []}
    for report in (True, False):
        args = {"enable_cache_report": True} if report else {}
        settings = EmulatorSettings(model=MODEL, profile=FAST, launch_args=args, log_startup=False)
        with emulator_server(settings) as url:
            for key, rows in _served(url, report).items():
                captured[key] += rows
            if report:
                captured["metrics"] = httpx.get(url + "/metrics", timeout=10).text
    assert "sglang:cached_tokens_total" in captured["metrics"]  # the families under test are there
    assert "sglang:prefill_effective_tokens_total" in captured["metrics"]
    captured["metrics_allowed"] = [d.name for d in DEVIATIONS if d.kind == "metric"]  # the declared ones
    captured["radix"] = [_radix_case(f"radix-page{p}-seed{s}", p, s) for p in (1, 64) for s in (1, 2, 3)]
    path = tmp_path / "captured.json"
    path.write_text(json.dumps(captured))
    found = run_in_bench_env(bench_python, "prefix_cache_check.py", path, report=tmp_path / "report.json")
    lines = [f"{m['case']} {m['where']}: emulator={m['emulator']} sglang={m['sglang']}" for m in found["mismatches"]]
    assert not found["mismatches"], "\n".join(lines[:20])
