"""Why a bench_serving run failed, in one line, and what its requests said one by one.

bench_serving's log starts with a long argument dump and ends with the error, so the first
characters of a log are useless; this finds the line that names the cause: the last line of
the last traceback, or one of bench_serving's own messages (server not ready, warm-up failed, all
requests failed). Per-request errors come from `--output-details` ("errors" in the result line).
When every request fails and warm-up is off, bench_serving 0.5.23 warns "All requests failed"
and then crashes computing percentiles of nothing (IndexError in calculate_metrics), writing no
result: that is reported as "no request completed", not as a crash of the benchmark.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from ..catalog import Scenario

_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning|Failed)\w*)(: .*)?$")
_BENCH_MESSAGES = (
    "Server did not become ready",
    "is not ready. Exiting",
    "Warmup failed",
    "All requests failed",
    "Failed to fetch model",
    "Please provide a model",
)
ALL_FAILED_CRASH = "index -1 is out of bounds"
MAX_DISTINCT_ERRORS = 3


def error_line(log: str) -> str | None:
    """The line of a bench_serving log that says why it failed (None when nothing looks like one)."""
    lines = [ln.rstrip() for ln in log.splitlines() if ln.strip()]
    last_traceback = max(
        (i for i, ln in enumerate(lines) if ln.startswith("Traceback (most recent call last)")), default=-1
    )
    if last_traceback >= 0:
        for ln in reversed(lines[last_traceback:]):
            if _EXCEPTION.match(ln.strip()):
                return ln.strip()
    for ln in reversed(lines):
        if any(m in ln for m in _BENCH_MESSAGES):
            return ln.strip()
    for ln in reversed(lines):
        if _EXCEPTION.match(ln.strip()) and "Warning" not in ln.split(":")[0]:
            return ln.strip()
    return None


def all_requests_failed(log: str) -> bool:
    """bench_serving saw no successful request (its warning, or the IndexError it then raises)."""
    return "All requests failed" in log or ALL_FAILED_CRASH in log


def failure_text(code: int | None, log: str, wrote_result: bool) -> str:
    """What the failed row says: the cause first, in full, then how bench_serving ended."""
    line = error_line(log)
    if all_requests_failed(log):
        why = (
            "no request completed: bench_serving reported that all requests failed"
            + (
                " and then crashed computing its summary (IndexError in calculate_metrics, what bench_serving "
                "0.5.23 does when nothing succeeded), so the per-request errors were not written"
                if ALL_FAILED_CRASH in log
                else ""
            )
            + ". Fix: check the key (api_key_env), the model name and the server's log; keep warmup_requests >= 1 "
            "so the warm-up request names the server's answer"
        )
        return why + (f" (last error line: {line})" if line and ALL_FAILED_CRASH not in line else "")
    ending = f"bench_serving exited with {code}" + ("" if wrote_result else " and wrote no result")
    return f"{ending}: {line}" if line else f"{ending} (no error line in its log)"


def request_details(output_file: Path) -> dict[str, Any] | None:
    """From the `--output-details` result line: how many requests failed and their distinct errors,
    plus the input/output lengths bench_serving recorded (min, max, total)."""
    return details_of(raw_result(output_file))


def details_of(row: dict[str, Any]) -> dict[str, Any] | None:
    """request_details of a result line already read (None without per-request details)."""
    if "errors" not in row:
        return None
    errors = [str(e) for e in row.get("errors") or [] if e]
    details: dict[str, Any] = {
        "requests": len(row.get("errors") or []),
        "failed": len(errors),
        "errors": [f"{msg.strip()[:1000]} (x{n})" for msg, n in Counter(errors).most_common(MAX_DISTINCT_ERRORS)],
    }
    for key in ("input_lens", "output_lens"):
        values = [v for v in row.get(key) or [] if isinstance(v, (int, float))]
        if values:
            details[key] = {"min": min(values), "max": max(values), "total": sum(values)}
    return details


def raw_result(output_file: Path) -> dict[str, Any]:
    """The last result line of the --output-file as written, per-request arrays included."""
    try:
        lines = [ln for ln in output_file.read_text(errors="replace").splitlines() if ln.strip().startswith("{")]
        row = json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError):
        return {}
    return row if isinstance(row, dict) else {}


def short_run(metrics: dict[str, Any], scenario: Scenario) -> bool:
    """Fewer completed requests than sent (failed requests, server died mid-run)."""
    done = metrics.get("completed")
    return isinstance(done, (int, float)) and done < scenario.num_prompts


def _request_errors(details: dict[str, Any] | None) -> str:
    if not details or not details.get("failed"):
        return ""
    return f"; {details['failed']} of {details['requests']} requests failed: " + " | ".join(details["errors"])


def classify(
    scenario: Scenario,
    code: int | None,
    timed_out: bool,
    timeout: float,
    metrics: dict[str, Any] | None,
    details: dict[str, Any] | None,
    log_text: str,
) -> dict[str, Any]:
    """status and error of a finished bench_serving run (see outcome.py for the error line)."""
    if timed_out:
        line = error_line(log_text)
        return {
            "status": "failed",
            "error": f"timed out after {timeout:g} s (fix: raise timeout_s for this scenario)"
            + (f"; last error line: {line}" if line else ""),
        }
    if code != 0 or not metrics:
        return {"status": "failed", "error": failure_text(code, log_text, bool(metrics)) + _request_errors(details)}
    if not metrics.get("completed"):
        return {"status": "failed", "error": failure_text(code, log_text, True) + _request_errors(details)}
    if short_run(metrics, scenario):
        return {
            "status": "failed",
            "error": (
                f"only {int(metrics['completed'])} of {scenario.num_prompts} requests completed; "
                "numbers from a partial run are not comparable (the metrics are kept)" + _request_errors(details)
            ),
        }
    return {"status": "ok", "error": None}
