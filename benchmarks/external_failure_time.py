"""How long does the runbook take to stop when an external server is not ready? (issue 25 item 7)

Goal: every readiness failure ends the whole runbook (deploy + report) within 20 s wall on a
2-core machine running two CPU hogs. This runs the cases of
tests/deploy/test_external.py::test_the_external_runbook_stops_within_30s_naming_cause_and_fix
(nothing listening, wrong key, unset key) with N busy-loop processes beside it (default 2) and
prints the wall time of each, and the stage timings the runbook recorded (stages.jsonl). All
figures are measured on this machine.

    .venv/bin/python benchmarks/external_failure_time.py [--hogs 2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kimi_runbooks import runbook
from kimi_runbooks.deploy import free_port
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.rundir import read_jsonl

KEY_ENV = "EXTERNAL_BENCH_KEY"
GOOD_KEY = "s3cret-ext-key-2931"
GOAL_S = 20.0


def run_case(case: str, url: str, run_dir: Path) -> tuple[float, str]:
    os.environ[KEY_ENV] = "bad-ext-key-value-77" if case == "wrong-key" else GOOD_KEY
    if case == "unset-key":
        del os.environ[KEY_ENV]
    base = f"http://127.0.0.1:{free_port()}" if case == "nothing-listening" else url
    params = {
        "platform": "h200",
        "launcher": "external",
        "base_url": base,
        "served_model_name": "served-x",
        "api_key_env": KEY_ENV,
        "stages": ["deploy", "report"],
        "run_dir": str(run_dir),
    }
    start = time.monotonic()
    try:
        runbook.run_runbook(params)
        outcome = "ended ok (not a failure?)"
    except runbook.RunbookFailed as exc:
        outcome = str(exc).splitlines()[0][:100]
    return time.monotonic() - start, outcome


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hogs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cases", nargs="+", default=["nothing-listening", "wrong-key", "unset-key"])
    args = ap.parse_args()
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL) for _ in range(args.hogs)
    ]
    rows = []
    try:
        with emulator_server(time_scale=0.01, log_startup=False, model="served-x", api_key=GOOD_KEY) as url:
            for case in args.cases:
                for i in range(args.repeat):
                    run_dir = Path(tempfile.mkdtemp(prefix="ext-bench-")) / "run"
                    took, outcome = run_case(case, url, run_dir)
                    stages = {
                        r["stage"]: r.get("duration_s") for r in read_jsonl(run_dir / "stages.jsonl") if r.get("stage")
                    }
                    rows.append((case, i, took, outcome, stages))
                    print(f"{case} #{i}: {took:.1f} s ({'within' if took <= GOAL_S else 'OVER'} {GOAL_S:g} s)"
                          f"  stages: {stages}  -> {outcome}", flush=True)  # fmt: skip
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    worst = max(r[2] for r in rows)
    print(f"\nmeasured, {args.hogs} CPU hogs, {os.cpu_count()} cores: worst {worst:.1f} s (goal {GOAL_S:g} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
