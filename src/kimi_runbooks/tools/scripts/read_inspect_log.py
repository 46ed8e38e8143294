"""Print the header of an inspect .eval log as one JSON line (run in the inspect tool env).

Usage: python read_inspect_log.py LOG.eval
"""

import json
import sys

from inspect_ai.log import read_eval_log

log = read_eval_log(sys.argv[1], header_only=True)
scores = []
for s in log.results.scores if log.results else []:
    scores.append({"name": s.name, "scorer": s.scorer, "metrics": {k: m.value for k, m in s.metrics.items()}})
cfg = log.eval.config
print(
    json.dumps(
        {
            "status": log.status,
            "task": log.eval.task,
            "model": log.eval.model,
            "dataset_samples": log.eval.dataset.samples,
            "epochs": cfg.epochs,
            "limit": cfg.limit,
            "total_samples": log.results.total_samples if log.results else 0,
            "completed_samples": log.results.completed_samples if log.results else 0,
            "scores": scores,
            "generate_config": log.plan.config.model_dump(exclude_none=True) if log.plan else {},
            "error": (log.error.message if log.error else None),
            "started_at": log.stats.started_at,
            "completed_at": log.stats.completed_at,
        },
        default=str,
    )
)
