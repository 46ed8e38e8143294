"""Where the demo runbook's time goes: runs `scripts/demo.py` (runbooks/h200.ipynb on the emulator,
time scale 0.05, the smoke set) and prints its wall time split by what the run already records, so
a cut can be aimed at overhead rather than at coverage (issue 39 item 6, goal <= 30 s on 2 cores):

* before the first stage: the demo's own imports, the runbook notebook's kernel start and its cells
  up to the first stage (outputs/demo-h200.ipynb's papermill times, the run's stages.jsonl);
* per stage: kernel start (papermill's notebook start to its first cell), the cells' work (the
  slowest cells named) and the tail after the last cell (kernel shutdown, the executed copy saved);
* inside the stages: the slowest invoke checks (invoke.json latency_ms; they run 4 at a time, so
  they overlap), each speed scenario and accuracy suite (their "ok in N s" lines in progress.jsonl);
* the report: notebook execution vs the HTML export after it;
* after the report: the demo's verdict and exit.

The machine's load average is printed with every run: on a shared machine the figures inflate.

    .venv/bin/python benchmarks/demo_time.py            # run the demo, then the breakdown
    .venv/bin/python benchmarks/demo_time.py --run-dir outputs/demo-<stamp>   # an earlier run's
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RUNBOOK_COPY = "demo-h200.ipynb"
"""scripts/demo.py's executed runbook notebook, in outputs/."""
STAGE_NOTEBOOKS = {
    "deploy": "deploy.ipynb",
    "invoke": "invoke.ipynb",
    "speed": "speed_bench.ipynb",
    "accuracy": "accuracy.ipynb",
    "report": "report.ipynb",
}
DONE_IN = re.compile(r"^(?P<what>.+?): ok in (?P<s>[0-9.]+) s")


def _ts(text: str | None) -> float | None:
    return datetime.fromisoformat(text).timestamp() if text else None


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f} (5 min {five:.2f}) on {os.cpu_count()} cores"


def notebook_times(path: Path) -> dict[str, Any] | None:
    """papermill's start/end of an executed notebook and each code cell's (start, duration, source)."""
    if not path.exists():
        return None
    nb = json.loads(path.read_text())
    meta = nb.get("metadata", {}).get("papermill", {})
    cells = []
    for cell in nb.get("cells", []):
        pm = cell.get("metadata", {}).get("papermill", {})
        if cell.get("cell_type") == "code" and pm.get("start_time"):
            first = "".join(cell.get("source", "")).strip().splitlines()
            cells.append((_ts(pm["start_time"]), float(pm.get("duration") or 0.0), first[0][:70] if first else ""))
    run_dir = (meta.get("parameters") or {}).get("run_dir")
    return {"start": _ts(meta.get("start_time")), "end": _ts(meta.get("end_time")), "cells": cells, "run_dir": run_dir}


def _split(nb: dict[str, Any]) -> tuple[float, float, float]:
    """kernel start (papermill start to the first cell), cells, tail (last cell's end to papermill's end)."""
    cells = nb["cells"]
    startup = cells[0][0] - nb["start"]
    work = sum(c[1] for c in cells)
    last_end = cells[-1][0] + cells[-1][1]
    return startup, work, max(0.0, nb["end"] - last_end)


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def breakdown(run_dir: Path, demo_started: float | None, demo_ended: float | None) -> list[str]:
    """The printed lines for one demo run folder (see the module docstring)."""
    out: list[str] = []
    runbook = notebook_times(run_dir.parent / RUNBOOK_COPY)
    if runbook and runbook["run_dir"] and Path(runbook["run_dir"]).resolve() != run_dir.resolve():
        out.append(f"({RUNBOOK_COPY} belongs to a later demo run: the runbook's own start-up is not shown)")
        runbook = None  # outputs/ keeps the latest demo's runbook copy only
    stages = _rows(run_dir / "stages.jsonl")
    finished = {r["stage"]: r for r in stages if r.get("status") != "running"}
    nbs = {name: notebook_times(run_dir / "notebooks" / nb) for name, nb in STAGE_NOTEBOOKS.items()}
    first_stage = next((nb for nb in nbs.values() if nb), None)
    if runbook and demo_started is not None:
        out.append(f"{'demo imports, papermill set-up':44s} {runbook['start'] - demo_started:6.1f} s")
    if runbook and first_stage:
        startup = runbook["cells"][0][0] - runbook["start"]
        out.append(f"{'runbook kernel start':44s} {startup:6.1f} s")
        before = first_stage["start"] - runbook["cells"][0][0]
        out.append(f"{'runbook cells up to the first stage notebook':44s} {before:6.1f} s")
        for start, duration, source in runbook["cells"]:
            upto = min(duration, first_stage["start"] - start)
            if upto >= 0.3:
                out.append(f"    {upto:5.1f} s  {source}")
    for name, nb in nbs.items():
        if nb is None or not nb["cells"]:
            out.append(f"{name}: no executed notebook")
            continue
        startup, work, tail = _split(nb)
        took = finished.get(name, {}).get("duration_s")
        total = f"stage {took:.1f} s; " if took is not None else ""
        out.append(
            f"{name + ' (notebook ' + format(nb['end'] - nb['start'], '.1f') + ' s)':44s} "
            f"{total}kernel start {startup:.1f} s, cells {work:.1f} s, tail {tail:.1f} s"
        )
        for _start, duration, source in sorted(nb["cells"], key=lambda c: -c[1])[:3]:
            if duration >= 0.3:
                out.append(f"    {duration:5.1f} s  {source}")
        if name == "report":
            html = run_dir / "report.html"
            if html.exists():
                export = html.stat().st_mtime - nb["end"]
                out.append(f"    {export:5.1f} s  HTML export after the notebook (report.html)")
    invoke = run_dir / "invoke.json"
    if invoke.exists():
        results = json.loads(invoke.read_text()).get("results", [])
        slow = sorted(results, key=lambda r: -(r.get("latency_ms") or 0))[:5]
        out.append("slowest invoke checks (4 run at a time, so they overlap):")
        for r in slow:
            tokens = f", {r['prompt_tokens']} prompt tokens" if r.get("prompt_tokens") else ""
            out.append(f"    {(r.get('latency_ms') or 0) / 1000:5.1f} s  {r['name']} ({r['status']}{tokens})")
    for row in _rows(run_dir / "progress.jsonl"):
        done = DONE_IN.match(row.get("message", ""))
        if done and row.get("stage") in ("speed", "accuracy"):
            out.append(f"    {float(done['s']):5.1f} s  {row['stage']} {done['what']}")
    report_nb = nbs.get("report")
    if report_nb and demo_ended is not None:
        html = run_dir / "report.html"
        after = html.stat().st_mtime if html.exists() else report_nb["end"]
        out.append(f"{'after the report (runbook end, verdict, exit)':44s} {demo_ended - after:6.1f} s")
    return out


def run_demo() -> tuple[Path, float, float, float]:
    """Run scripts/demo.py as `make demo` does; its run folder, start, end and the runbook's own figure."""
    started = time.time()
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "demo.py")], cwd=REPO, capture_output=True, text=True, check=False
    )
    ended = time.time()
    found = re.search(r"^report: (.+)$", proc.stdout, re.M)
    figure = re.search(r"^runbook: ([0-9.]+) s", proc.stdout, re.M)
    if proc.returncode or not found or not figure:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"scripts/demo.py exited {proc.returncode}; its output's tail is above")
    return Path(found.group(1).strip()).parent, started, ended, float(figure.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=Path, help="break down an earlier demo run folder instead of running one")
    args = parser.parse_args()
    print(f"before: {_load()}")
    if args.run_dir:
        run_dir, started, ended = args.run_dir.resolve(), None, None
        print(f"run folder: {run_dir}")
    else:
        run_dir, started, ended, runbook_s = run_demo()
        print(f"demo: {ended - started:.1f} s wall, runbook {runbook_s:.1f} s (scripts/demo.py's figure)")
        print(f"run folder: {run_dir}")
    for line in breakdown(run_dir, started, ended):
        print(line)
    print(f"after: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
