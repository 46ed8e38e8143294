"""Invoke stage: prove each documented Kimi feature works through the `openai` client users use.

`run(folder, options)` is the stage's one entry (InvokeOptions): it runs `run_all(handle, options)`,
the feature checks (checks.py; structured output and forced calls after a tool result,
structured_checks.py; the Kimi Vendor Verifier's pre-flight set, kvv.py) and the agentic suite
(agentic.py: multi-turn tool calling, parallel calls, long arguments, tool_choice, leaks, truncation)
against a server, each isolated (stage.py), and saves the `CheckResult`s to invoke.json (results.py);
`run_agentic` runs the suite alone; `agentic_card` is the report's view of the suite.

Plain imports; the openai client (0.5 s, 1.5 s under load) is imported where a request is sent
(run.run_all, session.describe_error, contracts), so the report reads invoke.json through `load`
and `CheckResult` without it (issue 25 item 7).
"""

from __future__ import annotations

from .agentic import AGENTIC_CASES, AgenticCase, agentic_card, agentic_results
from .checks import CHECKS, PRODUCT_TOOL, WEATHER_RESULT, WEATHER_TOOL
from .contracts import CONTRACT_CHECKS
from .image import RECEIPT_ITEM, data_url, receipt_png
from .kvv import KVV_CHECKS, stage_tokenizer
from .options import InvokeOptions
from .results import (
    CheckResult,
    ChecksFailed,
    Status,
    counts,
    last_exchange,
    load,
    print_progress,
    progress_to,
    raise_if_failed,
    save,
    summary_table,
)
from .served import ServedModel, checks_for
from .stage import (
    ALL_NAMES,
    FEATURE_CHECKS,
    detect_emulated,
    resolve_target,
    run,
    run_agentic,
    run_all,
    unusable_reason,
)
from .structured_checks import STRUCTURED_CHECKS

__all__ = [
    "InvokeOptions",
    "run",
    "AGENTIC_CASES",
    "ALL_NAMES",
    "AgenticCase",
    "CHECKS",
    "CONTRACT_CHECKS",
    "CheckResult",
    "FEATURE_CHECKS",
    "KVV_CHECKS",
    "STRUCTURED_CHECKS",
    "ChecksFailed",
    "PRODUCT_TOOL",
    "RECEIPT_ITEM",
    "ServedModel",
    "Status",
    "WEATHER_RESULT",
    "WEATHER_TOOL",
    "agentic_card",
    "agentic_results",
    "checks_for",
    "counts",
    "data_url",
    "detect_emulated",
    "last_exchange",
    "load",
    "print_progress",
    "progress_to",
    "raise_if_failed",
    "receipt_png",
    "resolve_target",
    "run_agentic",
    "run_all",
    "save",
    "stage_tokenizer",
    "summary_table",
    "unusable_reason",
]
