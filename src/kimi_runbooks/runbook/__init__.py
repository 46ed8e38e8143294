"""The orchestrator: a runbook's parameters (`params`), its stages run in order (`run`) and the
fingerprint that says whether a finished stage can be reused (`fingerprint`).

`from kimi_runbooks import runbook` is what the platform notebooks call: collect the parameters,
show the plan, run it, say how it went.
"""

from .brief_errors import brief_parameter_errors
from .params import (
    PARAMETER_NAMES,
    SHARED_PARAMS,
    STAGE_ORDER,
    PlanInvalid,
    RunbookOptions,
    collect_parameters,
    declared_parameters,
    split_params,
    stage_parameters,
)
from .run import RunbookFailed, RunbookResult, plan_text, result_text, run_runbook

__all__ = [
    "PARAMETER_NAMES",
    "SHARED_PARAMS",
    "STAGE_ORDER",
    "PlanInvalid",
    "RunbookFailed",
    "RunbookOptions",
    "RunbookResult",
    "brief_parameter_errors",
    "collect_parameters",
    "declared_parameters",
    "plan_text",
    "result_text",
    "run_runbook",
    "split_params",
    "stage_parameters",
]
