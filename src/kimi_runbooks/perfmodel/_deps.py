"""The one place the performance model imports the planner's modules.

The planner is moving into `kimi_runbooks.plan.{catalog,memory,launch}`; re-point these imports
and nothing else in this package needs to change.
"""

from __future__ import annotations

from ..catalog import (
    GB,
    Catalog,
    Deployment,
    Hardware,
    Model,
    ParamsError,
    Platform,
    load_catalog,
)
from ..planner import MemoryPlan, kv_bytes_per_token, plan_memory
from ..recipes import LaunchPlan, PlanConfig, canonical_flag, plan, resolve_knobs

__all__ = [
    "GB", "Catalog", "Deployment", "Hardware", "LaunchPlan", "MemoryPlan", "Model", "ParamsError",
    "PlanConfig", "Platform", "canonical_flag", "kv_bytes_per_token", "load_catalog", "plan",
    "plan_memory", "resolve_knobs",
]
