"""`make demo`: the H200 runbook on the emulator, headless, ending with the verdict and the report.

Runs runbooks/h200.ipynb through papermill (launcher emulator, time scale 0.05, the smoke
scenarios and accuracy suites) into outputs/demo-h200.ipynb and outputs/demo-<stamp>/, with the
runbook's progress lines streamed to this terminal, then prints the verdict, how long the runbook
took and the path of report.html. The benchmark client reads the emulator's own tokenizer (SmolLM2's
byte-level BPE, written as a plain JSON directory in well under a second by the speed stage). Exit
status: 0 for PASS or WARN, 1 otherwise.
"""

from __future__ import annotations

import logging
import sys
import time
from datetime import UTC, datetime

from kimi_runbooks import report
from kimi_runbooks.execution.notebook import SlicedWaitKernelManager
from kimi_runbooks.paths import REPO_ROOT, RUNBOOKS_DIR
from kimi_runbooks.rundir import RunFolder

RUNBOOK_GOAL_S = 30.0


def main() -> int:
    import papermill as pm  # after kimi_runbooks, which keeps jsonschema's slow IRI checker out of it

    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("papermill").setLevel(logging.INFO)  # the runbook's own lines, as they come
    outputs = REPO_ROOT / "outputs"
    run_dir = outputs / f"demo-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    started = time.monotonic()
    failed = None
    try:
        pm.execute_notebook(
            str(RUNBOOKS_DIR / "h200.ipynb"),
            str(outputs / "demo-h200.ipynb"),
            parameters={"launcher": "emulator", "time_scale": 0.05, "run_dir": str(run_dir)},
            progress_bar=False,
            log_output=True,
            cwd=str(REPO_ROOT),
            kernel_manager_class=SlicedWaitKernelManager,  # TCP as a user papermill uses (execution.notebook)
        )
    except pm.PapermillExecutionError as exc:
        failed = f"{exc.ename}: {exc.evalue}"
    took = time.monotonic() - started
    verdict = report.verdict(report.collect(RunFolder.of(run_dir)))
    print(f"\nverdict: {verdict.level} ({verdict.headline})")
    for reason in verdict.reasons[:10]:
        print(f"  - {reason}")
    if failed:
        print(f"the runbook raised {failed[:500]}")
    print(f"runbook: {took:.1f} s on this machine (goal: at most {RUNBOOK_GOAL_S:g} s on 2 cores)")
    html = run_dir / "report.html"
    print(f"report: {html if html.exists() else 'not written'}")
    return 0 if verdict.level in ("PASS", "WARN") else 1


if __name__ == "__main__":
    sys.exit(main())
