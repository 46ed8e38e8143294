"""What the speed stage costs around each benchmark: wall time per scenario minus bench_serving's
own `duration`, with the long-lived worker (default) and with one process per scenario.

Runs the smoke scenario set (3 scenarios, repeated --repeat times) through speed.run_scenarios
against the emulator (H200 profile, --time-scale 0.05 as `make demo` runs it, metrics sampled as
a runbook does) and prints, per scenario, the wall time of run_one, the benchmark's duration and
the difference. The goal (issue 15): at most 1.5 s of overhead per scenario after the first
(the first pays the worker's start: importing torch and sglang once). Exit code 1 when the worker's
overhead after the first scenario exceeds --goal. All numbers are measured on this machine
against the EMULATED server.

    .venv/bin/python benchmarks/harness_overhead.py [--repeat 2] [--goal 1.5] [--compare-process]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import kimi_runbooks.speed.run as speed_run
from kimi_runbooks import speed
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import RunHandle
from kimi_runbooks.tools.envs import ToolEnvError, tool_env


def timed_stage(url: str, tokenizer: Path, folder: Path, repeat: int, worker: bool) -> list[tuple[str, float, float]]:
    """(scenario, wall s, bench duration s) for each scenario run."""
    scenarios = [
        sc.model_copy(update={"id": f"{sc.id}-r{r}"}) for r in range(repeat) for sc in speed.select_scenarios("smoke")
    ]
    walls: dict[str, float] = {}
    original = speed_run.run_one

    def timed(scenario: Any, run: Any) -> dict[str, Any]:
        t0 = time.monotonic()
        row = original(scenario, run)
        walls[scenario.id] = time.monotonic() - t0
        return row

    speed_run.run_one = timed  # the loop looks run_one up at call time
    try:
        handle = RunHandle(
            base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200", time_scale=0.05
        )
        df = speed.run_scenarios(
            scenarios, handle, RunFolder.create(folder), tokenizer=tokenizer, offline=True, devices=8, platform="h200",
            progress=False, resume=False, worker=worker,
        )  # fmt: skip
    finally:
        speed_run.run_one = original
    out = []
    for _, row in df.iterrows():
        if row["status"] not in ("ok", "not comparable"):
            raise SystemExit(f"{row['scenario']}: {row['status']}: {row.get('error')}")
        out.append((str(row["scenario"]), walls[str(row["scenario"])], float(row["duration"])))
    return out


def report(name: str, rows: list[tuple[str, float, float]]) -> float:
    print(f"\n{name}")
    print(f"{'scenario':34} {'wall s':>8} {'bench s':>8} {'overhead s':>10}")
    for sid, wall, bench in rows:
        print(f"{sid:34} {wall:8.2f} {bench:8.2f} {wall - bench:10.2f}")
    after_first = [wall - bench for _, wall, bench in rows[1:]]
    worst = max(after_first) if after_first else 0.0
    print(
        f"overhead after the first scenario: median {statistics.median(after_first):.2f} s, max {worst:.2f} s; "
        f"total wall {sum(w for _, w, _ in rows):.1f} s for {len(rows)} scenarios"
    )
    return worst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--goal", type=float, default=1.5)
    ap.add_argument("--compare-process", action="store_true", help="also run one process per scenario")
    args = ap.parse_args()
    try:
        env = tool_env("bench")
    except ToolEnvError as exc:
        print(f"needs the bench tool env: {exc}")
        return 2
    base = Path(tempfile.mkdtemp(prefix="harness-overhead-"))
    tokenizer = make_offline_tokenizer(base / "tokenizer", env=env)
    with start_subprocess(["--profile", "h200", "--time-scale", "0.05", "--enable-metrics"]) as emu:
        worst = report("long-lived worker", timed_stage(emu.base_url, tokenizer, base / "worker", args.repeat, True))
        if args.compare_process:
            report(
                "one process per scenario", timed_stage(emu.base_url, tokenizer, base / "process", args.repeat, False)
            )
    print(f"\nemulated server (H200 profile, time scale 0.05); goal: at most {args.goal:g} s after the first scenario")
    return 0 if worst <= args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
