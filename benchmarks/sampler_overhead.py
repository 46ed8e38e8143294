"""Does sampling /metrics beside a scenario change what the scenario measures?

Runs the same scenario (random-ids 256/64, 64 prompts, concurrency 16) through SGLang's real
bench_serving against the emulator (H200 profile, time scale 1, --enable-metrics) twice per
round, once without the samplers and once with them (speed.run_scenarios(sample_metrics=...)),
alternating the order over `--rounds` rounds, and prints median TTFT and ITL of each with the
relative difference. The goal (issue 16): within 2%. Exit code 1 when a difference exceeds
--tolerance.

    .venv/bin/python benchmarks/sampler_overhead.py [--rounds 3] [--tolerance 0.02]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle
from kimi_runbooks.tools.envs import ToolEnvError, tool_env

SCENARIO = Scenario(
    id="overhead-c16",
    title="sampler overhead: random-ids 256/64, 64 prompts, concurrency 16",
    dataset="random-ids",
    input_len=256,
    output_len=64,
    num_prompts=64,
    max_concurrency=16,
    request_rate="inf",
    range_ratio=1.0,
    seed=1,
    warmup_requests=1,
    backend="sglang",
)


def one_run(url: str, tokenizer: Path, folder: Path, sample: bool) -> tuple[float, float]:
    handle = RunHandle(base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200")
    df = speed.run_scenarios(
        [SCENARIO], handle, RunFolder.create(folder), tokenizer=tokenizer, offline=True, devices=8, platform="h200",
        timeout_s=600, progress=False, verify_tokens=False, resume=False, sample_metrics=sample,
    )  # fmt: skip
    row = df.iloc[-1]
    if row["status"] != "ok":
        raise SystemExit(f"scenario failed: {row.get('error')}")
    return float(row["median_ttft_ms"]), float(row["median_itl_ms"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tolerance", type=float, default=0.02)
    args = ap.parse_args()
    try:
        env = tool_env("bench")
    except ToolEnvError as exc:
        print(f"needs the bench tool env: {exc}")
        return 2
    base = Path(tempfile.mkdtemp(prefix="sampler-overhead-"))
    tokenizer = make_offline_tokenizer(base / "tokenizer", env=env)
    results: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with start_subprocess(["--profile", "h200", "--time-scale", "1.0", "--enable-metrics"]) as emu:
        for r in range(args.rounds):
            for sample in (False, True) if r % 2 == 0 else (True, False):
                ttft, itl = one_run(emu.base_url, tokenizer, base / f"r{r}-{int(sample)}", sample)
                results[sample].append((ttft, itl))
                print(
                    f"round {r + 1} sampler {'on ' if sample else 'off'}: median TTFT {ttft:8.2f} ms  ITL {itl:6.2f} ms"
                )
    worst = 0.0
    for i, name in enumerate(("median TTFT", "median ITL")):
        off = statistics.median(v[i] for v in results[False])
        on = statistics.median(v[i] for v in results[True])
        diff = (on - off) / off
        worst = max(worst, abs(diff))
        print(f"{name}: off {off:.2f} ms, on {on:.2f} ms, difference {diff:+.2%} (goal within {args.tolerance:.0%})")
    print(f"emulated server (H200 latency model, time scale 1), {args.rounds} rounds; results in {base}")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
