"""Plan stage: params -> a validated launch plan, before anything starts.

params/ (catalog) -> PlanConfig knobs (config) -> flags (knobs) -> rules (rules) -> LaunchPlan
(launch, deployments) with its memory and KV-cache estimate (memory); shown as text or a form (view).
"""

from .catalog import Catalog, ParamsError, UnknownIdError, load_catalog
from .config import DEFAULT_SGLANG_VERSION, PlanConfig
from .launch_plan import LaunchPlan, NodeCommand
from .memory import CellFit, MemoryPlan, plan_memory
from .planner import plan
from .rules import RuleExpressionError, RuleResult
from .view import format_plan, plan_text

__all__ = [
    "Catalog",
    "CellFit",
    "DEFAULT_SGLANG_VERSION",
    "LaunchPlan",
    "MemoryPlan",
    "NodeCommand",
    "ParamsError",
    "PlanConfig",
    "RuleExpressionError",
    "RuleResult",
    "UnknownIdError",
    "format_plan",
    "load_catalog",
    "plan",
    "plan_memory",
    "plan_text",
]
