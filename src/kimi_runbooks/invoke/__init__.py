"""Invoke stage: prove each documented Kimi feature works through the `openai` client users use.

`run_all(target)` runs the checks (checks.py) against a server, each isolated (run.py), and
returns `CheckResult`s; `save` writes run_dir/invoke.json (results.py).
"""

from .checks import CHECKS, PRODUCT_TOOL, WEATHER_RESULT, WEATHER_TOOL
from .image import RECEIPT_ITEM, data_url, receipt_png
from .results import (
    CheckResult,
    ChecksFailed,
    Status,
    counts,
    last_exchange,
    load,
    print_progress,
    raise_if_failed,
    save,
    summary_table,
)
from .run import detect_emulated, resolve_target, run_all, unusable_reason

__all__ = [
    "CHECKS",
    "CheckResult",
    "ChecksFailed",
    "PRODUCT_TOOL",
    "RECEIPT_ITEM",
    "Status",
    "WEATHER_RESULT",
    "WEATHER_TOOL",
    "counts",
    "data_url",
    "detect_emulated",
    "last_exchange",
    "load",
    "print_progress",
    "raise_if_failed",
    "receipt_png",
    "resolve_target",
    "run_all",
    "save",
    "summary_table",
    "unusable_reason",
]
