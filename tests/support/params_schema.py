"""What a params/ scenario may hold, written down apart from the package's pydantic models: the
tests that read params/ YAML as plain data check it against these."""

from __future__ import annotations

SCENARIO_FIELDS = {
    "id",
    "trace",
    "title",
    "dataset",
    "input_len",
    "output_len",
    "num_prompts",
    "max_concurrency",
    "request_rate",
    "range_ratio",
    "seed",
    "warmup_requests",
    "backend",
    "extra_args",
    "matrix",
    "slo",
    "arrival",
    "search",
    "repeats",
    "think_time",
}
DATASETS = {"random", "random-ids", "sharegpt", "generated-shared-prefix", "image", "agentic-trace", "mooncake"}
"""bench_serving's --dataset-name values the scenarios use."""
