"""Kimi-K2 / Kimi-K2.6 runbooks on SGLang: plans, launches, probes, benchmarks, evals, reports."""

import sys

__version__ = "0.1.0"

# jsonschema (imported by nbformat, so by papermill, nbconvert and plotly's notebook renderer)
# imports rfc3987_syntax when it is installed, only to check the "iri" string format, and that
# builds 38 lark grammars: ~0.8 s of CPU in every process and kernel that shows a figure or runs a
# notebook (5 of them in one demo runbook). Nothing here validates an IRI, so the checker is left
# out (jsonschema skips it when the import fails, as when the package is absent).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
