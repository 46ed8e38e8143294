"""How faithfully does the speed stage measure? SGLang's real bench_serving, driven by the
runner (kimi_runbooks.speed.run_scenarios), against the emulator with a FIXED latency profile.

Prints measured / configured median TTFT and median ITL at concurrency 1, 16 and 64. The
configured values come straight from the profile (TTFT = base + per-1k x input tokens; ITL =
base + per-running x concurrency), so a ratio near 1 means runner + client + emulator add
little error. Target: within 5% at concurrency 16. All numbers here are EMULATED.

    .venv/bin/python benchmarks/runner_latency.py [--concurrency 1 16 64] [--output-len 64]

Needs the bench tool env (bash scripts/setup_tool_env.sh bench). By default the emulator runs
as its own process (like a real server) with the profile given by its CLI flags (--ttft-ms ...);
`--emulator thread` runs it in a thread of this process with the LatencyProfile object instead.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread, start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle

PROFILE = LatencyProfile(
    ttft_base_ms=150.0,
    ttft_per_1k_input_ms=40.0,
    itl_base_ms=20.0,
    itl_per_running_ms=0.2,
    max_total_num_tokens=10_000_000,
    max_running_requests=1024,
    source="fixed (benchmarks/runner_latency.py)",
)


def start_emulator(mode: str, run_dir: Path):
    """(base_url, stop) of an emulator with PROFILE, as a process (default) or a thread."""
    if mode == "thread":
        return run_in_thread(EmulatorSettings(port=0, profile=PROFILE, startup_seconds=0))
    proc = start_subprocess(
        [
            "--ttft-ms",
            str(PROFILE.ttft_base_ms),
            "--ttft-per-1k-ms",
            str(PROFILE.ttft_per_1k_input_ms),
            "--itl-ms",
            str(PROFILE.itl_base_ms),
            "--itl-per-running-ms",
            str(PROFILE.itl_per_running_ms),
            "--max-total-num-tokens",
            str(PROFILE.max_total_num_tokens),
            "--max-running-requests",
            str(PROFILE.max_running_requests),
        ]
    )
    return proc.base_url, proc.stop


def scenario(concurrency: int, input_len: int, output_len: int, waves: int) -> Scenario:
    return Scenario(
        id=f"latency-c{concurrency}",
        dataset="random-ids",
        input_len=input_len,
        output_len=output_len,
        num_prompts=max(waves * concurrency, 8),
        max_concurrency=concurrency,
        request_rate="inf",
        range_ratio=1.0,
        seed=1,
        warmup_requests=1,
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    p.add_argument("--input-len", type=int, default=512)
    p.add_argument("--output-len", type=int, default=64)
    p.add_argument("--waves", type=int, default=4, help="num_prompts = waves x concurrency")
    p.add_argument("--run-dir", type=Path, default=None)
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--emulator", choices=["process", "thread"], default="process")
    args = p.parse_args(argv)

    run_dir = args.run_dir or Path(tempfile.mkdtemp(prefix="runner-latency-"))
    tokenizer = make_offline_tokenizer(run_dir / "tokenizer")
    base_url, stop = start_emulator(args.emulator, run_dir)
    try:
        handle = RunHandle(base_url=base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", emulated=True)
        scenarios = [scenario(c, args.input_len, args.output_len, args.waves) for c in args.concurrency]
        df = speed.run_scenarios(
            scenarios,
            handle,
            RunFolder.of(run_dir, create=True),
            tokenizer=tokenizer,
            offline=True,
            resume=False,
            timeout_s=900,
        )
    finally:
        stop()
    print(f"\nEMULATED ({args.emulator}); profile: {PROFILE}\nrun folder: {run_dir}\n")
    print(
        f"{'conc':>5} {'TTFT cfg':>9} {'TTFT meas':>10} {'ratio':>6} {'ITL cfg':>8} {'ITL meas':>9} {'ratio':>6}"
        f" {'TPOT meas':>9}"
    )
    verdict = 0
    for c, (_, row) in zip(args.concurrency, df.iterrows()):
        if row["status"] != "ok":
            print(f"{c:>5} {row['status']}: {str(row.get('error'))[:300]}")
            verdict = 1
            continue
        mean_in = row["total_input_tokens"] / row["completed"]
        ttft_cfg, itl_cfg = PROFILE.ttft_ms(int(mean_in)), PROFILE.itl_ms(c)
        r_ttft, r_itl = row["median_ttft_ms"] / ttft_cfg, row["median_itl_ms"] / itl_cfg
        print(
            f"{c:>5} {ttft_cfg:>9.1f} {row['median_ttft_ms']:>10.1f} {r_ttft:>6.3f} {itl_cfg:>8.2f}"
            f" {row['median_itl_ms']:>9.2f} {r_itl:>6.3f} {row['median_tpot_ms']:>9.2f}"
        )
        if c == 16:
            ok = abs(r_ttft - 1) <= args.tolerance and abs(r_itl - 1) <= args.tolerance
            print(f"      concurrency 16 within {args.tolerance:.0%}: {'PASS' if ok else 'FAIL'}")
            verdict |= 0 if ok else 1
    return verdict


if __name__ == "__main__":
    sys.exit(main())
