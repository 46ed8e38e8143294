"""Invoke stage: prove each documented Kimi feature works through the `openai` client users use.

`run_all(target)` runs the feature checks (checks.py; structured output and forced calls after a
tool result, structured_checks.py; the Kimi Vendor Verifier's pre-flight set, kvv.py) and the
agentic suite (agentic.py: multi-turn tool calling, parallel calls, long arguments, tool_choice, leaks,
truncation) against a server,
each isolated (run.py), and returns `CheckResult`s; `run_agentic` runs the suite alone;
`save` writes run_dir/invoke.json (results.py); `agentic_card` is the report's view of the suite.

The names load on first use (PEP 562): the report reads invoke.json through `load` and
`CheckResult`, and importing the checks would import the openai client (0.5 s, 1.5 s under load)
into every report kernel, on the failing path of an external run too (issue 25 item 7).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agentic import AGENTIC_CASES, AgenticCase, agentic_card, agentic_results
    from .checks import CHECKS, PRODUCT_TOOL, WEATHER_RESULT, WEATHER_TOOL
    from .contracts import CONTRACT_CHECKS
    from .image import RECEIPT_ITEM, data_url, receipt_png
    from .kvv import KVV_CHECKS, stage_tokenizer
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
    from .run import ALL_NAMES, FEATURE_CHECKS, detect_emulated, resolve_target, run_agentic, run_all, unusable_reason
    from .served import ServedModel, checks_for
    from .structured_checks import STRUCTURED_CHECKS

_HOME = {
    "AGENTIC_CASES": "agentic",
    "AgenticCase": "agentic",
    "agentic_card": "agentic",
    "agentic_results": "agentic",
    "CHECKS": "checks",
    "PRODUCT_TOOL": "checks",
    "WEATHER_RESULT": "checks",
    "WEATHER_TOOL": "checks",
    "CONTRACT_CHECKS": "contracts",
    "RECEIPT_ITEM": "image",
    "data_url": "image",
    "receipt_png": "image",
    "KVV_CHECKS": "kvv",
    "stage_tokenizer": "kvv",
    "CheckResult": "results",
    "ChecksFailed": "results",
    "Status": "results",
    "counts": "results",
    "last_exchange": "results",
    "load": "results",
    "print_progress": "results",
    "progress_to": "results",
    "raise_if_failed": "results",
    "save": "results",
    "summary_table": "results",
    "ALL_NAMES": "run",
    "FEATURE_CHECKS": "run",
    "detect_emulated": "run",
    "resolve_target": "run",
    "run_agentic": "run",
    "run_all": "run",
    "unusable_reason": "run",
    "ServedModel": "served",
    "checks_for": "served",
    "STRUCTURED_CHECKS": "structured_checks",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
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
