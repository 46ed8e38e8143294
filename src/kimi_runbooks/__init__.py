"""Kimi-K2 / Kimi-K2.6 runbooks on SGLang: plans, launches, probes, benchmarks, evals, reports."""

__version__ = "0.1.0"
