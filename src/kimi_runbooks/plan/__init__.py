"""Plan stage: params -> a validated launch plan, before anything starts.

params/ (catalog) -> PlanConfig knobs (config) -> flags (knobs) -> rules (rules) -> LaunchPlan
(launch, deployments) with its memory and KV-cache estimate (memory); shown as text or a form (view),
saved in the run folder and loaded back whole by later stages (saved).
"""

from .config import DEFAULT_SGLANG_VERSION, EXAMPLE_PLATFORM, PlanConfig
from .launch_plan import LaunchPlan, NodeCommand
from .memory import CellFit, MemoryPlan, plan_memory
from .planner import plan
from .rules import RuleExpressionError, RuleResult
from .saved import SavedPlanError, load_plan, save_plan
from .view import format_plan, plan_text

__all__ = [
    "CellFit",
    "DEFAULT_SGLANG_VERSION",
    "EXAMPLE_PLATFORM",
    "LaunchPlan",
    "MemoryPlan",
    "NodeCommand",
    "PlanConfig",
    "RuleExpressionError",
    "RuleResult",
    "SavedPlanError",
    "format_plan",
    "load_plan",
    "plan",
    "plan_memory",
    "plan_text",
    "save_plan",
]
