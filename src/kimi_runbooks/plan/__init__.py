"""Plan stage: params -> a validated launch plan, before anything starts.

params/ (catalog) -> PlanConfig knobs (config) -> flags (knobs) -> rules (rules) -> LaunchPlan
(launch, deployments) with its memory and KV-cache estimate (memory); shown as text or a form (view).
"""

from .catalog import Catalog, ParamsError, UnknownIdError, load_catalog
from .config import DEFAULT_SGLANG_VERSION, PlanConfig
from .launch import plan
from .launch_plan import LaunchPlan, NodeCommand
from .memory import CellFit, MemoryPlan, plan_memory
from .rules import RuleExpressionError, RuleResult
from .view import command_generator, format_plan, plan_text, predicted_text

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
    "command_generator",
    "format_plan",
    "load_catalog",
    "plan",
    "plan_memory",
    "plan_text",
    "predicted_text",
]
