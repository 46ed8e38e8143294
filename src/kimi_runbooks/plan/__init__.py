"""Plan stage: a run configuration -> a validated launch plan, before anything starts.

`plan(config)` (planner.py) is one pipeline, each step a function in its own module, read in order:

1. cell        `choose_cell` (cookbook.py): the model's cookbook cell for this hardware and strategy,
               whose knob values fill those the user left unset (`cell_config`)
2. knobs       `resolve_knobs` (knobs.py): each knob as set, else the platform recipe's or the model's
3. args        `launch_args` (args.py): the knobs' (or the cell's) SGLang flags, extra arguments folded in
4. rules       `check_server` (server_rules.py): the memory plan (memory.py) and every params/rules rule
5. LaunchPlan  `build_launch_plan` (commands.py): argv, env, docker and per-node commands (launch_plan.py)

Before step 1, `read_user_args` (args.py) reads the user's extra arguments, since a knob's flag
there sets the knob. Replicas behind a router (fleet.py) run this pipeline once per replica;
published multi-role deployments (deployments.py) take their flags from params/deployments/ and
share the rules step (`plan_server`). params/ is read through catalog/, below this package. A plan
is shown as text or a form (view), saved in the run folder and loaded back whole by later stages
(saved).
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
