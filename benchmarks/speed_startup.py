"""The speed stage's fixed start-up: how long `papermill notebooks/speed_bench.ipynb` run alone against
an already running server takes before the first scenario's first benchmark request reaches it.

Starts an emulator (default latency profile, time scale 0.05) in this process behind a recorder that
timestamps every request as it arrives, then runs the speed notebook alone against it, as the README
shows for a stage against an external server:

    papermill notebooks/speed_bench.ipynb out.ipynb -p run_dir RUN -p base_url URL -p tokenizer DIR \\
        -y "scenarios: [smoke-random-ids-c1]"

with one tiny scenario (8 requests of 128/32 tokens). The figure is the time from papermill's start
to the first streamed request bench_serving sends (its warm-up request; the token check's probe is
not streamed), split into phases read from real timestamps: papermill's per-cell start and end
times in the executed notebook, the stage's own start-up events in run_dir/progress.jsonl
(speed/start_phases.py) and the server-side arrival times. Median of --runs runs. Goal (issue 28 item 6):
at most 10 s on this project's 2-core machine. All of it is measured on this machine against an
EMULATED server.

    .venv/bin/python benchmarks/speed_startup.py [--runs 3] [--goal 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
import uvicorn

from kimi_runbooks.emulator.app import create_app
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed.start_phases import marks
from kimi_runbooks.tools.envs import ToolEnvError, tool_env

NOTEBOOK = REPO_ROOT / "notebooks" / "speed_bench.ipynb"
SCENARIO = "smoke-random-ids-c1"


@dataclass(frozen=True)
class Variant:
    """The code a run executes: this checkout, or another revision's src/ and notebook (--before)."""

    label: str
    notebook: Path
    src: Path | None = None


def revision(rev: str, into: Path) -> Variant:
    """Another revision's src/, notebooks/ and params/ exported with `git archive` (the checkout is not
    touched); its kernel imports that src first (PYTHONPATH wins over the editable install)."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "archive", rev, "src", "notebooks", "params"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    short = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", rev], capture_output=True, text=True, check=True
    ).stdout.strip()
    return Variant(f"before ({short})", into / "notebooks" / "speed_bench.ipynb", into / "src")


Scope = dict[str, Any]
Receive = Callable[[], Any]
Send = Callable[[dict[str, Any]], Any]


class RequestLog:
    """An ASGI wrapper recording (arrival time, path, streamed?) of every POST the server receives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.rows: list[tuple[float, str, bool]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        arrived = time.time()
        first = await receive()  # the request body (bench_serving's bodies fit one message)
        body = first.get("body", b"") if first.get("type") == "http.request" else b""
        try:
            stream = bool(json.loads(body or b"{}").get("stream"))
        except ValueError:
            stream = False
        self.rows.append((arrived, str(scope.get("path")), stream))
        replayed = False

        async def again() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await self.app(scope, again, send)

    def first(self, after: float, stream: bool) -> float | None:
        found = [t for t, _, s in self.rows if t >= after and s == stream]
        return min(found) if found else None


def serve(recorder_of: Callable[[Any], RequestLog]) -> tuple[str, RequestLog, Callable[[], None]]:
    """The emulator on an ephemeral port in a thread, behind the recorder."""
    settings = EmulatorSettings(time_scale=0.05)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    recorder = recorder_of(create_app(settings))
    server = uvicorn.Server(uvicorn.Config(recorder, log_level="warning", access_log=False, lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)

    return f"http://127.0.0.1:{port}", recorder, stop


def _ts(value: Any) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def cell_times(executed: Path) -> list[tuple[str, float, float]]:
    """(source, start, end) of each executed code cell, from papermill's metadata."""
    nb = nbformat.read(str(executed), as_version=4)
    out = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("papermill", {})
        start, end = _ts(meta.get("start_time")), _ts(meta.get("end_time"))
        if cell.cell_type == "code" and start is not None and end is not None:
            out.append((cell.source, start, end))
    return out


def startup_events(run_dir: Path) -> dict[str, float]:
    """The speed stage's start-up marks (speed/start_phases.py) and its first scenario's start event."""
    found: dict[str, float] = {}
    for phase, at in marks(RunFolder(run_dir)):
        found.setdefault(phase, at)
    for row in read_jsonl(run_dir / "progress.jsonl"):
        message = str(row.get("message"))
        if row.get("stage") == "speed" and message.startswith("scenario 1/") and message.endswith("started"):
            found.setdefault("scenario-started", float(row["t"]))
    return found


def one_run(url: str, recorder: RequestLog, tokenizer: Path, base: Path, name: str, variant: Variant) -> dict[str, Any]:
    run_dir, out = base / f"run-{name}", base / f"out-{name}.ipynb"
    papermill = str(Path(sys.executable).with_name("papermill"))
    argv = [papermill, str(variant.notebook), str(out), "-p", "run_dir", str(run_dir), "-p", "base_url", url]
    argv += ["-p", "tokenizer", str(tokenizer), "-y", f"scenarios: [{SCENARIO}]", "--no-progress-bar"]
    env = {**os.environ, **({"PYTHONPATH": str(variant.src)} if variant.src else {})}
    t0 = time.time()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=base, env=env, timeout=900)
    t_end = time.time()
    if proc.returncode != 0:
        raise SystemExit(f"papermill failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rows = read_jsonl(run_dir / "bench.jsonl")
    if [r.get("status") for r in rows] != ["ok"]:
        raise SystemExit(f"the scenario did not end ok: {[(r.get('status'), r.get('error')) for r in rows]}")
    cells = cell_times(out)
    first_bench = recorder.first(t0, stream=True)
    probe = recorder.first(t0, stream=False)
    if first_bench is None:
        raise SystemExit("no streamed request reached the server")
    marks = startup_events(run_dir)
    ready = [r for r in read_jsonl(run_dir / "progress.jsonl") if r.get("phase") == "worker-ready"]
    imports = next(c for c in cells if "from kimi_runbooks import speed\n" in c[0] + "\n")
    run_cell = next(c for c in cells if "options = speed.SpeedOptions" in c[0])
    return {
        "t0": t0,
        "first_cell": cells[0][1],
        "imports_start": imports[1],
        "imports_end": imports[2],
        "run_cell": run_cell[1],
        "probe_request": probe,
        "first_bench": first_bench,
        "end": t_end,
        **{f"mark:{k}": v for k, v in marks.items()},
        "worker_import_s": ready[0].get("import_s") if ready else None,
        "worker_ready_cpu_s": ready[0].get("ready_cpu_s") if ready else None,
    }


def phases(r: dict[str, float]) -> dict[str, float]:
    """Consecutive phases: the recorded points in time, sorted, each phase from the previous point
    to its own (a point this version of the stage does not record is left out, its time counted in
    the next one's). The bench worker imports in the background from "worker-start" on: "waiting
    for the bench worker" is what of its import the rest did not hide."""
    m = {k[5:]: v for k, v in r.items() if k.startswith("mark:")}
    points: list[tuple[str, float | None]] = [
        ("papermill start until the kernel process starts", m.get("kernel-start")),
        ("kernel start until the first cell", r["first_cell"]),
        ("until the bench worker starts", m.get("worker-start")),
        ("first cells and the notebook's imports done", r["imports_end"]),
        ("target, scenarios, tokenizer cells", r["run_cell"]),
        ("run_scenarios set-up until the token check", m.get("token-check")),
        ("waiting for the bench worker (sglang imported)", m.get("worker-ready")),
        ("token probe until its request reaches the server", r["probe_request"]),
        ("token check (probe request, judged)", m.get("token-check-done") or m.get("scenario-started")),
        ("until the first scenario starts", m.get("scenario-started")),
        ("health check, to bench_serving", m.get("first-benchmark")),
        ("bench_serving set-up until its warm-up request", r["first_bench"]),
    ]
    out, last = {}, r["t0"]
    for name, at in sorted(((n, a) for n, a in points if a is not None), key=lambda p: p[1]):
        out[name] = at - last  # from the previous point in time to this one
        last = at
    out["TOTAL: papermill start to the first benchmark request"] = r["first_bench"] - r["t0"]
    if "kernel-start" in m:
        out["(from the kernel process's start)"] = r["first_bench"] - m["kernel-start"]
    out["(after it: the benchmark and the rest of the notebook)"] = r["end"] - r["first_bench"]
    if r.get("worker_import_s") is not None:
        out["(bench worker: wall s to import bench_serving)"] = float(r["worker_import_s"])
    if r.get("worker_ready_cpu_s") is not None:
        out["(bench worker: CPU s used by then)"] = float(r["worker_ready_cpu_s"])
    return out


def table(label: str, runs: list[dict[str, float]]) -> float:
    """Print one variant's phases (median and each run); returns the median total."""
    names: list[str] = []
    for r in runs:
        names += [n for n in r if n not in names]
    print(f"\n{label}: speed notebook alone against a running EMULATED server, scenario {SCENARIO}, {len(runs)} runs")
    print(f"{'phase':62} {'median s':>9}   runs")
    for name in names:
        values = [r[name] for r in runs if name in r]
        print(f"{name:62} {statistics.median(values):9.2f}   {' '.join(f'{v:6.2f}' for v in values)}")
    return statistics.median(r[TOTAL] for r in runs)


TOTAL = "TOTAL: papermill start to the first benchmark request"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--goal", type=float, default=10.0)
    ap.add_argument("--before", metavar="REV", help="also run this git revision's notebook and src, interleaved")
    ap.add_argument("--keep", action="store_true", help="keep the run folders and executed notebooks")
    args = ap.parse_args()
    try:
        env = tool_env("bench")
    except ToolEnvError as exc:
        print(f"needs the bench tool env: {exc}")
        return 2
    base = Path(tempfile.mkdtemp(prefix="speed-startup-"))
    variants = [Variant("after (this checkout)", NOTEBOOK)]
    if args.before:
        variants.insert(0, revision(args.before, base / "before"))
    tokenizer = make_offline_tokenizer(base / "tokenizer", env=env)
    url, recorder, stop = serve(RequestLog)
    runs: dict[str, list[dict[str, float]]] = {v.label: [] for v in variants}
    loads = []
    try:
        for i in range(args.runs):
            for j, variant in enumerate(variants):  # interleaved: both see the same machine load
                r = phases(one_run(url, recorder, tokenizer, base, f"{i}-{j}", variant))
                runs[variant.label].append(r)
                loads.append(os.getloadavg()[0])
                print(f"{variant.label} run {i + 1}: {r[TOTAL]:.1f} s to the first benchmark request", flush=True)
    finally:
        stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    totals = {label: table(label, rs) for label, rs in runs.items()}
    print()
    for label, total in totals.items():
        print(f"median fixed start-up, {label}: {total:.1f} s")
    print(
        f"goal <= {args.goal:g} s; measured on {os.cpu_count()} cores, 1-minute load average "
        f"{min(loads):.1f} to {max(loads):.1f} during the runs (this machine is shared)"
    )
    if args.keep:
        print(f"kept: {base}")
    return 0 if totals[variants[-1].label] <= args.goal else 1


if __name__ == "__main__":
    sys.exit(main())
