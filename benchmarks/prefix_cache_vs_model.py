"""Prefix cache: what the performance model predicts for prefix= against what the emulator measures.

For a platform's default plan, each row sends a prompt of IN tokens twice to an in-process
emulator with that plan's predicted profile (the second time a share HIT of it is already
cached: the first request is the prefix followed by other ids), then the request whose prefix
matches, streamed, and times the first token. Printed side by side, all at time scale 1:

* predicted prefill (Predictor.prefill_seconds with prefix_hit) and predicted median TTFT at c=1
  (Predictor.predict(Scenario(..., prefix_hit=HIT))): PREDICTED;
* the emulator's measured TTFT of the hit request, divided by the time scale: EMULATED, with the
  cached_tokens it reported.

    .venv/bin/python benchmarks/prefix_cache_vs_model.py
    .venv/bin/python benchmarks/prefix_cache_vs_model.py --platform b200 --time-scale 0.2

At small time scales the emulator's fixed per-request cost (HTTP, JSON of tens of thousands of ids,
~3 us per prompt token here) is divided by the scale too and shows as a gap.
The emulator's TTFT is its prefill alone (c=1, nothing queued): the predicted median TTFT at c=1
also carries half a decode step and the closed loop's own terms (perfmodel/queueing.py), so the
prefill column is the one the emulator should equal (exit 1 when off by more than --tolerance).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import httpx

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.profile import latency_profile
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.perfmodel import Predictor
from kimi_runbooks.perfmodel.predict import Scenario
from kimi_runbooks.plan import plan

WIDTHS = (6, 5, 7, 21, 22, 17)
ROWS = ((8000, 0.0), (8000, 0.5), (8000, 0.9), (32000, 0.9), (32000, 0.97))


def first_token_s(http: httpx.Client, ids: list[int]) -> tuple[float, int]:
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": 2, "ignore_eos": True}, "stream": True}
    start = time.perf_counter()
    first, cached = None, 0
    with http.stream("POST", "/generate", json=body) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                first = first if first is not None else time.perf_counter() - start
                cached = json.loads(line[6:])["meta_info"]["cached_tokens"]
    return float(first or 0.0), cached


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default="h200")
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--tolerance", type=float, default=0.15, help="allowed relative gap to the predicted prefill")
    args = ap.parse_args()
    launch = plan({"platform": args.platform}, load_catalog())
    predictor = Predictor(launch)
    pool = predictor.serving.prefill_pool
    profile = latency_profile(launch, predictor)
    settings = EmulatorSettings(profile=profile, time_scale=args.time_scale, log_startup=False)
    print(f"{args.platform}: prefill with a cached prefix, time scale 1 (emulator measured at x{args.time_scale})")
    heads = ("in", "hit", "cached", "PREDICTED prefill ms", "PREDICTED TTFT c=1 ms", "EMULATED TTFT ms")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, WIDTHS)))
    worst = 0.0
    with emulator_server(settings) as url, httpx.Client(base_url=url, timeout=600) as http:
        for row, (input_len, hit) in enumerate(ROWS):
            shared = int(input_len * hit)
            base = 10_000 * (row + 1)
            prefix = list(range(base, base + shared))
            if shared:  # put the prefix in the tree (a different tail, so only the prefix matches)
                first_token_s(http, prefix + [1] * (input_len - shared))
            measured, cached = first_token_s(http, prefix + [2] * (input_len - shared))
            emulated = measured / args.time_scale * 1000
            prefill = predictor.prefill_seconds(pool, input_len, cached / input_len) * 1000
            ttft = predictor.predict(Scenario(input_len=input_len, output_len=2, concurrency=1, prefix_hit=hit))
            worst = max(worst, abs(emulated / prefill - 1.0))
            cells = (input_len, f"{hit:.2f}", cached, f"{prefill:.1f}", f"{ttft.median_ttft_ms:.1f}", f"{emulated:.1f}")
            print(" ".join(f"{c:>{w}}" for c, w in zip(cells, WIDTHS)))
    print(f"largest gap emulated vs predicted prefill: {worst:.1%} (tolerance {args.tolerance:.0%})")
    return 1 if worst > args.tolerance else 0


if __name__ == "__main__":
    sys.exit(main())
