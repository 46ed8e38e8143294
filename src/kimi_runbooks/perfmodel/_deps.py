"""The one place the performance model imports the planner's modules.

The planner lives in `kimi_runbooks.plan`; only this module names its submodules.
"""

from __future__ import annotations

from ..catalog import (
    GB,
    Catalog,
    CookbookCell,
    Deployment,
    Hardware,
    Model,
    ParamsError,
    Platform,
    Reference,
    load_catalog,
)
from ..catalog.flags import canonical_flag, flag_value
from ..plan import LaunchPlan, PlanConfig, plan
from ..plan.knobs import resolve_knobs
from ..plan.memory import MemoryPlan, kv_bytes_per_token, plan_memory
from ..plan.running_limit import sglang_max_running_requests, speculative_sets_max_running
from ..plan.saved import SAVED, SavedPlanError, plan_from_record
from ..plan.state_pool import StateSettings, state_bytes_per_slot

__all__ = [
    "GB",
    "Catalog",
    "CookbookCell",
    "Deployment",
    "Hardware",
    "LaunchPlan",
    "MemoryPlan",
    "SAVED",
    "SavedPlanError",
    "Model",
    "ParamsError",
    "PlanConfig",
    "Platform",
    "Reference",
    "canonical_flag",
    "flag_value",
    "kv_bytes_per_token",
    "load_catalog",
    "plan",
    "plan_from_record",
    "plan_memory",
    "resolve_knobs",
    "sglang_max_running_requests",
    "speculative_sets_max_running",
    "state_bytes_per_slot",
    "StateSettings",
]
