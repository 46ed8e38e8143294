"""Report stage: what a reviewer reads without Jupyter.

collect (what each stage left in the run folder) -> verdict (and warnings) -> tables and figures
-> show (the report notebook's cells) -> html (report.html, self-contained); compare_runs puts
several run folders on one page. Every number carries its origin: measured (with run id),
emulated, or reference (with source).
"""

from .collect import RunData, StageState, collect, stage_outcome
from .compare_runs import build as build_comparison
from .html import export_html, external_references, redact_notebook, render, strip_plotly_mathjax
from .show import (
    setup_notebook,
    show_accuracy,
    show_banner,
    show_invoke,
    show_manifest,
    show_plan,
    show_speed,
    show_stages,
    show_top,
    show_verdict,
)
from .tables import summary_text
from .verdict import Verdict, accuracy_comparison, speed_comparison, verdict, warnings

__all__ = [
    "RunData",
    "StageState",
    "Verdict",
    "accuracy_comparison",
    "build_comparison",
    "collect",
    "export_html",
    "external_references",
    "redact_notebook",
    "render",
    "setup_notebook",
    "show_accuracy",
    "show_banner",
    "show_invoke",
    "show_manifest",
    "show_plan",
    "show_speed",
    "show_stages",
    "show_top",
    "show_verdict",
    "speed_comparison",
    "stage_outcome",
    "strip_plotly_mathjax",
    "summary_text",
    "verdict",
    "warnings",
]
