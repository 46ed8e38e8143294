"""Live progress of a run: stages report what they are doing, the runbook shows it as it happens.

A stage runs inside its own notebook kernel, so its prints reach the runbook only when the stage
ends (for the speed stage, hours later on hardware). Instead each stage appends short events to
run_dir/progress.jsonl (`report_progress`), and the runbook tails that file while the stage runs
(`ProgressRelay`): one line per event in papermill's log and in Jupyter, rate-limited so a
bench client's request counter does not flood the output. In a Jupyter kernel with ipywidgets,
`stage_bar` adds a live bar (stages done of all) with the latest event beside it.
"""

from __future__ import annotations

import html
import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .procs import BackgroundLoop
from .rundir import RunFolder, now_iso, read_jsonl

PROGRESS_FILE = RunFolder.PROGRESS
MIN_INTERVAL_S = 2.0
"""Between two relayed lines of the same stage and key (milestones are always shown)."""


TQDM_COUNT = re.compile(r"(\d+)/(\d+) \[")
"""The "done/total [" counter a tqdm bar prints (bench_serving's requests, an eval tool's samples)."""


def latest_count(log_path: Path, tail_bytes: int = 4000) -> tuple[int, int] | None:
    """The last tqdm counter in the tail of a tool's log: (done, total); None before the first one
    or when the log cannot be read (the tool has not opened it yet)."""
    try:
        with log_path.open("rb") as fh:
            fh.seek(max(0, log_path.stat().st_size - tail_bytes))
            tail = fh.read().decode(errors="replace")
    except OSError:
        return None
    found = TQDM_COUNT.findall(tail)
    return (int(found[-1][0]), int(found[-1][1])) if found else None


def report_progress(
    folder: RunFolder | None,
    stage: str,
    message: str,
    *,
    key: str = "",
    milestone: bool = False,
    **fields: Any,
) -> None:
    """Append one progress event; a no-op without a run folder (a stage run outside a runbook)."""
    if folder is None:
        return
    if not folder.path.is_dir():
        return
    folder.append_jsonl(
        folder.file(PROGRESS_FILE),
        {
            "at": now_iso(),
            "t": time.time(),
            "stage": stage,
            "message": message,
            "key": key,
            "milestone": milestone,
            **fields,
        },
    )


class ProgressRelay:
    """Tails progress.jsonl in a thread and prints new events as `[runbook] <stage>: <message>`."""

    def __init__(
        self,
        folder: RunFolder,
        printer: Callable[[str], None] | None = None,
        interval_s: float = 0.5,
        bar: StageBar | None = None,
    ) -> None:
        self.folder = folder
        self.path = folder.file(PROGRESS_FILE)
        self.printer = printer or (lambda line: print(line, flush=True))
        self.bar = bar
        self.interval_s = interval_s
        self._seen = len(read_jsonl(self.path))
        self._last: dict[tuple[str, str], float] = {}
        self._loop = BackgroundLoop("progress-relay", self._run)

    def __enter__(self) -> ProgressRelay:
        self._loop.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.stop(timeout=5)
        self.flush(final=True)

    def _run(self, stopping: threading.Event) -> None:
        while not stopping.wait(self.interval_s):
            self.flush()

    def flush(self, final: bool = False) -> None:
        rows = read_jsonl(self.path)
        new, self._seen = rows[self._seen :], len(rows)
        for i, row in enumerate(new):
            slot = (str(row.get("stage")), str(row.get("key") or ""))
            last_of_slot = not any((str(r.get("stage")), str(r.get("key") or "")) == slot for r in new[i + 1 :])
            due = time.monotonic() - self._last.get(slot, 0.0) >= MIN_INTERVAL_S
            if row.get("milestone") or due or (final and last_of_slot):
                self._last[slot] = time.monotonic()
                self.printer(f"[runbook] {row.get('stage')}: {row.get('message')}")
            if self.bar is not None:
                self.bar.event(f"{row.get('stage')}: {row.get('message')}")


class StageBar:
    """A Jupyter progress widget for a runbook: stages done of all, and the latest event."""

    def __init__(self, total: int, widgets: Any) -> None:
        self.bar = widgets.IntProgress(value=0, min=0, max=max(total, 1), description="stages")
        self.label = widgets.HTML(value="starting")
        self.box = widgets.HBox([self.bar, self.label])

    def stage(self, name: str, done: int, status: str = "running") -> None:
        self.bar.value = done
        self.label.value = html.escape(f"{name}: {status}")

    def event(self, text: str) -> None:
        self.label.value = html.escape(text[:200])

    def bundle(self) -> dict[str, Any]:
        """The widget's display data with a short plain-text form: papermill's log and nbconvert
        print text/plain, where the widget's own repr ("HBox(children=(IntProgress(...") is noise."""
        data: dict[str, Any] = dict(self.box._repr_mimebundle_())
        data["text/plain"] = "[runbook stage progress: a Jupyter widget; the lines below say the same]"
        return data


def stage_bar(total: int) -> StageBar | None:
    """The widget when this process is a Jupyter kernel with ipywidgets (displayed at once), else
    None: papermill's log and a terminal get the relayed lines only."""
    try:
        import ipywidgets
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return None
    shell = get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return None
    bar = StageBar(total, ipywidgets)
    display(bar.bundle(), raw=True)
    return bar
