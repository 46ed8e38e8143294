"""The params/ catalog: every params file's pydantic model and the loader that reads the folder,
validates each file and checks the cross-references. It sits below the planner, the performance
model and the stages, which all read params/ and none of which it knows.

Scenario models live here too, though only the speed stage runs them: the loader validates
params/scenarios/ with the rest, and a deployment's `benchmark` names a scenario it must find.
"""

from .cookbook_models import Cookbook, CookbookCell
from .load import ANY_PLATFORM, SAFE_LOADER, Catalog, UnknownIdError, default_params_dir, load_catalog
from .params_models import (
    GB,
    GIB,
    Architecture,
    Deployment,
    DraftModel,
    Hardware,
    LinearAttention,
    Model,
    Platform,
    Recipe,
    Reference,
    Role,
    Router,
    Rule,
    RuleFile,
    RuleScope,
)
from .scenario_models import Scenario, ScenarioSet, ThinkTime, TraceDesign
from .values import ArgValue, ParamsError

__all__ = [
    "ANY_PLATFORM",
    "GB",
    "GIB",
    "SAFE_LOADER",
    "Architecture",
    "ArgValue",
    "Catalog",
    "Cookbook",
    "CookbookCell",
    "Deployment",
    "DraftModel",
    "Hardware",
    "LinearAttention",
    "Model",
    "ParamsError",
    "Platform",
    "Recipe",
    "Reference",
    "Role",
    "Router",
    "Rule",
    "RuleFile",
    "RuleScope",
    "Scenario",
    "ScenarioSet",
    "ThinkTime",
    "TraceDesign",
    "UnknownIdError",
    "default_params_dir",
    "load_catalog",
]
