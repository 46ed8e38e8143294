"""Does the emulator keep time?  Measured vs configured TTFT and ITL.

Starts ``python -m kimi_runbooks.emulator`` with a fixed profile (TTFT 200 ms + 0 per 1K
input, ITL 10 ms + 0 per running request, time scale 1), drives it with streamed
/generate requests at concurrency 1 and 16 (bench_serving's ``sglang`` backend shape:
input_ids, ignore_eos, cumulative text, ITL from completion_tokens increments) and prints
median TTFT and median ITL with their measured/configured ratios.

    .venv/bin/python benchmarks/emulator_latency.py
    .venv/bin/python benchmarks/emulator_latency.py --bench-python .venvs/bench/bin/python --tokenizer DIR

With ``--bench-python`` the load comes from SGLang's own ``sglang.bench_serving
--backend sglang --dataset-name random-ids`` in that interpreter (skipped with a note when
the interpreter does not exist).  Exit code 1 when a ratio is off by more than --tolerance.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import urlopen

from kimi_runbooks.emulator.testing import EmulatorProcess, start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer

TTFT_MS = 200.0
ITL_MS = 10.0


@dataclass
class RequestTiming:
    ttft: float = 0.0
    itls: list[float] = field(default_factory=list)
    output_tokens: int = 0


async def sse_events(base_url: str, path: str, body: bytes) -> AsyncIterator[bytes]:
    """POST and yield SSE event payloads as they arrive.

    A bare asyncio HTTP/1.1 client: httpx spends enough CPU per chunk at 16 concurrent
    streams to delay its own timestamps by tens of milliseconds on a 2-core machine,
    which would be measured as emulator latency.  (bench_serving uses aiohttp.)
    """
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    try:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n"
        )
        writer.write(head.encode() + body)
        await writer.drain()
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(f"HTTP error: {status!r}")
        headers = b""
        while (line := await reader.readline()) not in (b"\r\n", b""):
            headers += line.lower()
        if b"transfer-encoding: chunked" not in headers:
            raise RuntimeError("expected a chunked streaming response")
        buffer = b""
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                break
            buffer += await reader.readexactly(size)
            await reader.readexactly(2)
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                yield event
    finally:
        writer.close()


def make_body(input_len: int, output_len: int, rng: random.Random) -> bytes:
    """A /generate body like bench_serving's random-ids requests (built before timing)."""
    return json.dumps(
        {
            "input_ids": [rng.randrange(100, 150000) for _ in range(input_len)],
            "sampling_params": {"temperature": 0.0, "max_new_tokens": output_len, "ignore_eos": True},
            "stream": True,
        }
    ).encode()


async def one_request(base_url: str, body: bytes) -> RequestTiming:
    """One streamed /generate request timed the way bench_serving's sglang backend does."""
    timing = RequestTiming()
    start = last = time.perf_counter()
    last_count = 0
    async for event in sse_events(base_url, "/generate", body):
        now = time.perf_counter()
        data = event.removeprefix(b"data:").strip()
        if data == b"[DONE]":
            break
        count = json.loads(data)["meta_info"]["completion_tokens"]
        if last_count == 0:
            timing.ttft = now - start
        elif count > last_count:
            gap = (now - last) / (count - last_count)
            timing.itls.extend([gap] * (count - last_count))
        last, last_count = now, count
    timing.output_tokens = last_count
    return timing


async def drive(
    base_url: str, concurrency: int, num_requests: int, input_len: int, output_len: int
) -> list[RequestTiming]:
    rng = random.Random(concurrency)
    bodies = [make_body(input_len, output_len, rng) for _ in range(num_requests)]
    gate = asyncio.Semaphore(concurrency)

    async def gated(body: bytes) -> RequestTiming:
        async with gate:
            return await one_request(base_url, body)

    return await asyncio.gather(*(gated(body) for body in bodies))


def summarize(timings: list[RequestTiming], output_len: int) -> dict[str, float]:
    bad = [t.output_tokens for t in timings if t.output_tokens != output_len]
    if bad:
        raise SystemExit(f"wrong output lengths: {bad[:5]} (expected {output_len})")
    return {
        "median_ttft_ms": statistics.median(t.ttft for t in timings) * 1000,
        "median_itl_ms": statistics.median(x for t in timings for x in t.itls) * 1000,
        "mean_itl_ms": statistics.fmean(x for t in timings for x in t.itls) * 1000,
    }


def offline_tokenizer(python: str) -> str:
    """The emulator's own tokenizer dir (SmolLM2's byte-level BPE), so bench_serving needs no download."""
    del python  # plain JSON, written in this venv
    return str(make_offline_tokenizer(Path(tempfile.mkdtemp(prefix="emu-tokenizer-")) / "tokenizer"))


def run_bench_serving(
    python: str, base_url: str, concurrency: int, num_requests: int, input_len: int, output_len: int, tokenizer: str
) -> dict[str, float]:
    out = Path(tempfile.mkdtemp()) / "bench.jsonl"
    cmd = [
        python,
        "-m",
        "sglang.bench_serving",
        "--backend",
        "sglang",
        "--base-url",
        base_url,
        "--dataset-name",
        "random-ids",
        "--random-input-len",
        str(input_len),
        "--random-output-len",
        str(output_len),
        "--random-range-ratio",
        "1",
        "--num-prompts",
        str(num_requests),
        "--max-concurrency",
        str(concurrency),
        "--request-rate",
        "inf",
        "--output-file",
        str(out),
        "--tokenizer",
        tokenizer,
    ]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    row = json.loads(out.read_text().strip().splitlines()[-1])
    return {k: float(row[k]) for k in ("median_ttft_ms", "median_itl_ms", "mean_itl_ms")}


def server_ttft(base_url: str) -> tuple[float, float]:
    """(sum, count) of the server's own sglang:time_to_first_token_seconds histogram."""
    with urlopen(base_url + "/metrics", timeout=10) as response:
        text = response.read().decode()
    found = dict(re.findall(r"^sglang:time_to_first_token_seconds_(sum|count)\{[^}]*\} (\S+)$", text, re.M))
    return float(found.get("sum", 0)), float(found.get("count", 0))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    ap.add_argument("--requests-per-concurrency", type=int, default=None, help="default: max(16, 4 x concurrency)")
    ap.add_argument("--input-len", type=int, default=1000)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument(
        "--bench-python", default=None, help="interpreter with sglang installed, to use sglang.bench_serving"
    )
    ap.add_argument(
        "--tokenizer", default=None, help="tokenizer dir for bench_serving (default: a generated offline one)"
    )
    args = ap.parse_args(argv)

    bench_python = args.bench_python
    if bench_python and not Path(bench_python).exists():
        print(f"note: {bench_python} does not exist; using the built-in client", file=sys.stderr)
        bench_python = None
    tokenizer = args.tokenizer or (offline_tokenizer(bench_python) if bench_python else None)

    profile_args = [
        "--ttft-ms",
        str(TTFT_MS),
        "--ttft-per-1k-ms",
        "0",
        "--itl-ms",
        str(ITL_MS),
        "--itl-per-running-ms",
        "0",
        "--time-scale",
        "1",
    ]
    server: EmulatorProcess = start_subprocess(profile_args)
    failures = 0
    try:
        client = "sglang.bench_serving" if bench_python else "built-in asyncio client (/generate)"
        print(
            f"emulator at {server.base_url}; load from {client}; "
            f"input {args.input_len}, output {args.output_len} tokens"
        )
        print(
            f"{'conc':>5} {'reqs':>5} {'TTFT ms':>9} {'ratio':>7} {'ITL ms':>8} {'ratio':>7} "
            f"{'mean ITL':>9} {'ratio':>7} {'server TTFT':>12}"
        )
        for concurrency in args.concurrency:
            n = args.requests_per_concurrency or max(16, 4 * concurrency)
            before = server_ttft(server.base_url)
            if bench_python:
                stats = run_bench_serving(
                    bench_python, server.base_url, concurrency, n, args.input_len, args.output_len, tokenizer
                )
            else:
                timings = asyncio.run(drive(server.base_url, concurrency, n, args.input_len, args.output_len))
                stats = summarize(timings, args.output_len)
            after = server_ttft(server.base_url)
            server_mean = (after[0] - before[0]) / max(after[1] - before[1], 1) * 1000
            ratios = (stats["median_ttft_ms"] / TTFT_MS, stats["median_itl_ms"] / ITL_MS, stats["mean_itl_ms"] / ITL_MS)
            print(
                f"{concurrency:>5} {n:>5} {stats['median_ttft_ms']:>9.1f} {ratios[0]:>7.3f} "
                f"{stats['median_itl_ms']:>8.2f} {ratios[1]:>7.3f} {stats['mean_itl_ms']:>9.2f} "
                f"{ratios[2]:>7.3f} {server_mean:>12.1f}"
            )
            failures += sum(abs(r - 1) > args.tolerance for r in ratios[:2])
    finally:
        server.stop()
    print(
        "OK: within tolerance" if not failures else f"FAIL: {failures} ratio(s) off by more than {args.tolerance:.0%}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
