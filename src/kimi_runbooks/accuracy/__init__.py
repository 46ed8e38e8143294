"""Accuracy stage: drivers for the published evaluation tools, their parsers, and the comparison.

One module per tool (each tool runs as a subprocess in its own env, see kimi_runbooks.tools.envs):
``sgl_eval`` (aime25, gsm8k, gpqa, mmmu_pro), ``inspect_eval`` (inspect_evals gpqa_diamond),
``vendor_verifier`` (K2-/Kimi-Vendor-Verifier checkouts), ``toolcall_eval`` (the built-in
tool-call eval in K2-Vendor-Verifier's formats); ``compare`` sets rows next to params/references;
``runner.run(folder, AccuracyOptions(...))``, the stage's entry, runs a list of suites and appends rows to
the folder's accuracy.jsonl.
"""

from .common import ACCURACY_FILE, EvalRow, StageMissing, SuiteFailed, read_rows, rows_frame
from .references import chart, compare, reference_frame, wilson
from .runner import SMOKE_SUITES, SUITES, AccuracyOptions, run
from .toolcall_eval import read_results, read_summary, run_toolcall_eval, summarize, trigger_f1
from .toolcall_samples import write_ci_samples

__all__ = [
    "ACCURACY_FILE",
    "AccuracyOptions",
    "EvalRow",
    "SMOKE_SUITES",
    "SUITES",
    "StageMissing",
    "SuiteFailed",
    "chart",
    "compare",
    "read_results",
    "read_rows",
    "rows_frame",
    "read_summary",
    "reference_frame",
    "run",
    "run_toolcall_eval",
    "summarize",
    "trigger_f1",
    "wilson",
    "write_ci_samples",
]
