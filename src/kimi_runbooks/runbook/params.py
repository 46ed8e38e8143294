"""A runbook's parameters, every one checked before anything starts.

A parameter the runbook does not know (`-p bogus_knob 3`), a list passed as text (`-p stages
"[...]"`), an unknown launcher, scenario set or accuracy suite, or a `stage_overrides` name the
stage notebook does not declare would otherwise surface only after the server is up (a full weight
load on hardware) or never. `split_params` and `check_before_start` refuse each with the nearest
valid name and the fix; `stage_parameters` then hands each stage notebook only names it declares.
"""

from __future__ import annotations

import ast
import difflib
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..catalog.scenario_models import checked_repeats
from ..plan import PlanConfig
from ..plan.config import validation_text
from ..secrets import SecretError, require_redactable
from ..stages import STAGE_NAMES, availability, stage
from ..target.health import normalize_base_url

STAGE_ORDER = STAGE_NAMES
SHARED_PARAMS = ("run_dir", "api_key_env", "platform", "launcher", "time_scale", "scenario_set")
"""What every later stage may receive. `model` and `base_url` go to deploy only: in the invoke and
speed notebooks `model` is the *served* name and `base_url` an external server, read from handle.json."""
STAGE_OPTIONS = {
    "invoke": {"tokenizer": "tokenizer"},
    "speed": {
        "scenarios": "scenarios",
        "tokenizer": "tokenizer",
        "stop_when_saturated": "stop_when_saturated",
        "price_per_device_hour": "price_per_device_hour",
        "repeats": "repeats",
    },
    "accuracy": {"eval_suites": "suites"},
}
"""Runbook option -> the stage notebook parameter it sets (the accuracy notebook says `suites`), so a
setting the README tells users about is a typed runbook parameter, not a `stage_overrides` entry."""
NOTEBOOK_NAMES = frozenset({"params", "result", "Optional"})
"""Names the runbook notebook itself assigns or imports (its parameters cell imports `Optional`
for the typed parameters; a rerun of its cells finds them all in globals)."""


class PlanInvalid(ValueError):
    """The plan or a parameter failed validation; nothing was started. The message says the fix."""


class RunbookOptions(BaseModel):
    """The runbook's own parameters (everything that is not a knob of plan.PlanConfig). Each field's
    docstring is the comment beside it in the runbooks' parameters cell (`papermill --help-notebook`)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    launcher: str = "emulator"
    """emulator: CI or a laptop rehearsal; sglang-cpu: real SGLang with a tiny model on this CPU; on the hardware
    local | docker | external | multi-node | slurm."""
    base_url: str | None = None
    """For launcher external: the URL of the running server."""
    stages: list[str] = Field(default_factory=lambda: list(STAGE_ORDER))
    """The stages to run, in the documented order (pass a list with -y)."""
    scenario_set: str | None = "smoke"
    """params/scenarios: smoke (CI) or a published set."""
    scenarios: list[str] | None = None
    """Speed scenario ids from params/scenarios instead of the set's; None: the scenario_set's."""
    tokenizer: str | None = None
    """The served model's tokenizer (a local directory) for every stage that counts tokens (invoke's
    prompt-token check, speed); None: the deployed model_path's, or (emulator only) the emulator's own.
    Needed against an external server."""
    stop_when_saturated: bool = False
    """End a concurrency sweep once the server queues and throughput stops growing."""
    price_per_device_hour: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """$ per device-hour for the cost column; None: the platform's published list price."""
    repeats: int | None = None
    """Runs per speed scenario (a scenario's own repeats wins): mean and 95% interval; None: once."""
    eval_suites: list[str] | None = None
    """Accuracy suites; None: the accuracy stage's defaults."""
    run_dir: str | None = None
    """None: outputs/<run id> under the checkout (or $KIMI_RUNBOOKS_OUTPUTS/<run id>)."""
    time_scale: float = Field(default=1.0, gt=0, le=1000, allow_inf_nan=False)
    """Emulator only: below 1 runs its latency model faster."""
    fail_on_error: bool = True
    """Raise after the report when a stage or check failed."""
    force: bool = False
    """Reuse a run folder that holds another configuration's results (they are moved aside)."""
    stage_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Extra parameters for one stage notebook, e.g. {"invoke": {"timeout": 60}}."""

    @field_validator("repeats")
    @classmethod
    def _repeats(cls, value: int | None) -> int | None:
        return checked_repeats(
            value,
            "",
            "e.g. -p repeats 3 for a mean with a 95% interval per speed scenario, or leave it unset (None) for one "
            "run each",
        )

    @field_validator("base_url")
    @classmethod
    def _usable_url(cls, value: str | None) -> str | None:
        if value is not None:
            normalize_base_url(value)  # BaseUrlError (a ValueError) names the rule and the fix
        return value

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in STAGE_ORDER]
        if unknown:
            raise ValueError(
                f"unknown stage(s) {[_nearest(s, STAGE_ORDER) for s in unknown]}; valid: {list(STAGE_ORDER)}"
            )
        return [s for s in STAGE_ORDER if s in value]  # always run in the documented order


PARAMETER_NAMES = (*PlanConfig.model_fields, *RunbookOptions.model_fields)


def _nearest(name: str, valid: Iterable[str]) -> str:
    """`'name'` plus ` (did you mean 'x'?)` when difflib finds a close valid name."""
    close = difflib.get_close_matches(name, list(valid), n=1, cutoff=0.6)
    return f"'{name}'" + (f" (did you mean '{close[0]}'?)" if close else "")


def _is_container(annotation: Any) -> bool:
    """True for list/dict fields (also inside `X | None`)."""
    origin = typing.get_origin(annotation)
    if origin in (list, dict, tuple, set):
        return True
    return any(_is_container(a) for a in typing.get_args(annotation)) if origin is not None else False


def _text_for_container(params: dict[str, Any]) -> list[str]:
    fields = {**PlanConfig.model_fields, **RunbookOptions.model_fields}
    return sorted(
        k for k, v in params.items() if isinstance(v, str) and k in fields and _is_container(fields[k].annotation)
    )


def split_params(params: dict[str, Any]) -> tuple[dict[str, Any], RunbookOptions]:
    """Runbook parameters -> (PlanConfig fields, RunbookOptions); unknown names fail clearly."""
    plan_fields = set(PlanConfig.model_fields)
    option_fields = set(RunbookOptions.model_fields)
    unknown = sorted(set(params) - plan_fields - option_fields)
    if unknown:
        raise PlanInvalid(
            f"unknown runbook parameter(s) {', '.join(_nearest(u, PARAMETER_NAMES) for u in unknown)}. "
            f"Nothing was started. Fix: use the knobs of plan.PlanConfig ({', '.join(sorted(plan_fields))}) "
            f"or the runbook options ({', '.join(sorted(option_fields))})."
        )
    as_text = _text_for_container(params)
    if as_text:
        example = "; ".join(f"{k}: {params[k]}" for k in as_text)
        raise PlanInvalid(
            f"parameter(s) {as_text} arrived as text ({example!r}): papermill's -p passes every value as "
            "a string or number. Nothing was started. Fix: pass lists and dicts as YAML with -y, e.g. "
            'papermill runbooks/h200.ipynb out.ipynb -y "stages: [deploy, invoke, report]".'
        )
    config = cells_over_recipe(
        {k: v for k, v in params.items() if k in plan_fields}, params.get("platform"), params.get("model")
    )
    config = deployment_over_recipe(config, params.get("platform"))
    try:
        options = RunbookOptions.model_validate({k: v for k, v in params.items() if k in option_fields})
    except ValidationError as exc:
        raise PlanInvalid(f"invalid runbook parameters: {validation_text(exc)}. Nothing was started.") from None
    return config, options


RECIPE_KNOBS = ("tp", "dp", "ep", "enable_dp_attention", "kv_cache_dtype", "mem_fraction_static", "context_length")
"""Knobs a runbook's parameters cell fills with its platform recipe's values (scripts/notebook_cells/runbooks.py)."""


def cells_over_recipe(config: dict[str, Any], platform_id: Any, model_id: Any) -> dict[str, Any]:
    """For a model with published cookbook cells (params/cookbook pages) or its own deployment
    snippet's recipe on this platform (Model.snippet_recipes), the parameters cell's recipe values
    are the platform's default model's, not choices for this model: a knob still equal to the
    recipe's value is left unset so the cell's or the snippet's value applies (`-p tp 8` equal to
    the recipe's tp is then the cell's too; pass `-p extra_args` or another value to differ)."""
    from ..catalog import ParamsError, load_catalog

    try:
        catalog = load_catalog()
        platform = catalog.platform(str(platform_id))
        model = catalog.model(str(model_id)) if model_id else None
    except ParamsError:
        return config  # plan() reports the unknown id with the valid ones
    if model is None or model.id == platform.recipe.model:
        return config
    if model.cookbook is None and platform.id not in model.snippet_recipes:
        return config
    recipe = platform.recipe.model_dump()
    return {k: (None if k in RECIPE_KNOBS and v == recipe.get(k) else v) for k, v in config.items()}


def deployment_over_recipe(config: dict[str, Any], platform_id: Any) -> dict[str, Any]:
    """With a published deployment, each role's own flags (params/deployments: prefill
    --mem-fraction-static 0.78, decode 0.82) are the plan's; a knob still equal to the platform
    recipe's value is the parameters cell's default (ascend-a3's mem_fraction_static 0.662, the
    mixed deployment's), not a choice, so it is left unset instead of overriding every role. A
    different value still overrides every role; to force the recipe's own value on every role, pass
    it in extra_args (e.g. ["--mem-fraction-static", "0.662"])."""
    from ..catalog import ParamsError, load_catalog

    if not config.get("deployment"):
        return config
    try:
        recipe = load_catalog().platform(str(platform_id)).recipe.model_dump()
    except ParamsError:
        return config  # plan() reports the unknown id with the valid ones
    return {k: (None if k in RECIPE_KNOBS and v is not None and v == recipe.get(k) else v) for k, v in config.items()}


def declared_parameters(notebook: Path) -> set[str]:
    """Names assigned in the notebook's `parameters` cell (read with ast: papermill's own
    inspector drops lines whose comments contain quotes)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            tree = ast.parse(cell.source)
            return {
                t.id
                for node in tree.body
                if isinstance(node, (ast.Assign, ast.AnnAssign))
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                if isinstance(t, ast.Name)
            }
    return set()


def check_before_start(config: dict[str, Any], options: RunbookOptions, notebooks_dir: Path) -> None:
    """Everything that can be known wrong before a server starts; all problems in one PlanInvalid."""
    problems = _launcher_problems(options) + _key_problems(config)
    problems += _stage_override_problems(options, notebooks_dir)
    if "speed" in options.stages:
        problems += _scenario_problems(options)
    if "accuracy" in options.stages and options.eval_suites is not None:
        problems += _suite_problems(options.eval_suites)
    if problems:
        lines = "\n".join(f"  - {p}" for p in problems)
        raise PlanInvalid(f"{len(problems)} runbook parameter problem(s); nothing was started:\n{lines}")


def _launcher_problems(options: RunbookOptions) -> list[str]:
    from ..deploy import LAUNCHERS

    if options.launcher not in LAUNCHERS:
        return [f"launcher {_nearest(options.launcher, LAUNCHERS)} is not known. Fix: one of {', '.join(LAUNCHERS)}."]
    if options.launcher == "external" and not options.base_url:
        return ["launcher 'external' needs base_url (the running server). Fix: -p base_url http://HOST:PORT."]
    return []


def _key_problems(config: dict[str, Any]) -> list[str]:
    try:
        require_redactable(config.get("api_key_env"))
    except SecretError as exc:
        return [str(exc)]
    return []


def _stage_override_problems(options: RunbookOptions, notebooks_dir: Path) -> list[str]:
    problems = []
    for name, values in options.stage_overrides.items():
        if name not in STAGE_ORDER:
            problems.append(
                f"stage_overrides names stage {_nearest(name, STAGE_ORDER)}. Fix: one of {list(STAGE_ORDER)}."
            )
            continue
        if availability(name, notebooks_dir):
            continue  # reported as "not available" when the stage comes
        declared = declared_parameters(notebooks_dir / stage(name).notebook)
        for key in sorted(set(values) - declared):
            problems.append(
                f"stage_overrides[{name!r}] names {_nearest(key, declared)}, which the {name} notebook does "
                f"not declare. Fix: use its parameters: {sorted(declared)}."
            )
        types = parameter_types(notebooks_dir / stage(name).notebook)
        for key, value in sorted(values.items()):
            wanted = types.get(key)
            if wanted and not _fits(value, wanted):
                problems.append(
                    f"stage_overrides[{name!r}][{key!r}] is {value!r}, but the {name} notebook declares it "
                    f"{wanted}. Fix: pass a value of that type."
                )
    return problems


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list, tuple),
    "dict": (dict,),
}


def parameter_types(notebook: Path) -> dict[str, str]:
    """The annotation of each typed parameter of a notebook's parameters cell (`x: Optional[int]`)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
            return {
                node.target.id: ast.unparse(node.annotation)
                for node in ast.parse(cell.source).body
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            }
    return {}


def _fits(value: Any, annotation: str) -> bool:
    """Whether a value suits a parameter's annotation (str, int, float, bool, list, dict, Optional[...])."""
    inner = annotation.removeprefix("Optional[").removesuffix("]") if annotation.startswith("Optional[") else None
    if inner is not None:
        return value is None or _fits(value, inner)
    kinds = _TYPES.get(annotation)
    if kinds is None:
        return True  # Any and the like: nothing to check
    if isinstance(value, bool) and bool not in kinds:
        return False  # True is an int to Python, not to a user who meant a number
    return isinstance(value, kinds)


def _scenario_problems(options: RunbookOptions) -> list[str]:
    from ..catalog import load_catalog

    catalog = load_catalog()
    overridden = options.stage_overrides.get("speed", {}).get("scenarios")
    chosen, where = (
        (overridden, "stage_overrides['speed']['scenarios']") if overridden else (options.scenarios, "scenarios")
    )
    if chosen:
        unknown = [s for s in chosen if s not in catalog.scenarios]
        return [
            f"{where} names unknown scenario {_nearest(s, catalog.scenarios)}. Fix: an id from params/scenarios."
            for s in unknown
        ]
    if options.scenario_set is None or options.scenario_set in catalog.scenario_sets:
        return []
    return [
        f"scenario_set {_nearest(options.scenario_set, catalog.scenario_sets)} is not known. "
        f"Fix: one of {', '.join(sorted(catalog.scenario_sets))} (params/scenarios/)."
    ]


def _suite_problems(suites: list[str]) -> list[str]:
    from ..accuracy.options import SUITES

    return [
        f"eval_suites names unknown suite {_nearest(s, SUITES)}. Fix: one of {', '.join(SUITES)}."
        for s in suites
        if s not in SUITES
    ]


def stage_parameters(
    stage_name: str, config: dict[str, Any], options: RunbookOptions, folder: Path, declared: set[str]
) -> dict[str, Any]:
    """What to inject into a stage notebook: only names its parameters cell declares."""
    values: dict[str, Any] = {
        "run_dir": str(folder),
        "api_key_env": config.get("api_key_env"),
        "platform": config.get("platform"),
        "launcher": options.launcher,
        "time_scale": options.time_scale,
        "scenario_set": options.scenario_set,
    }
    allowed = set(SHARED_PARAMS)
    for option, name in STAGE_OPTIONS.get(stage_name, {}).items():
        if getattr(options, option) is not None:
            values[name] = getattr(options, option)
            allowed.add(name)
    if stage_name == "deploy":  # no knobs: it launches the plan the runbook saved in the run folder
        values.update(base_url=options.base_url, keep_running=True)  # the runbook tears the server down
        allowed = {*allowed, "base_url", "keep_running"}
    chosen = {k: v for k, v in values.items() if k in declared and k in allowed}
    extra = options.stage_overrides.get(stage_name, {})
    unknown = sorted(set(extra) - declared)
    if unknown:
        raise PlanInvalid(
            f"stage_overrides[{stage_name!r}] names {unknown}, which the {stage_name} notebook does "
            f"not declare. Fix: use its parameters: {sorted(declared)}."
        )
    return {**chosen, **extra}


def collect_parameters(namespace: dict[str, Any]) -> dict[str, Any]:
    """The runbook parameters out of a notebook's globals (after papermill's injected cell).

    Any other name there came from papermill's injected cell (`-p bogus_knob 3`): refused, with
    the nearest valid name, instead of being silently ignored."""
    hidden: set[str] = set()
    shell = namespace.get("get_ipython")
    if callable(shell):
        try:
            hidden = set(getattr(shell(), "user_ns_hidden", {}) or {})
        except Exception:  # noqa: BLE001 - outside IPython there is nothing hidden
            hidden = set()
    stray = sorted(
        name
        for name, value in namespace.items()
        if not name.startswith("_")
        and name not in PARAMETER_NAMES
        and name not in hidden
        and name not in NOTEBOOK_NAMES
        and name not in {"In", "Out", "get_ipython", "exit", "quit", "open"}
        and not isinstance(value, types.ModuleType)
    )
    if stray:
        raise PlanInvalid(
            f"unknown runbook parameter(s) {', '.join(_nearest(s, PARAMETER_NAMES) for s in stray)}. "
            "Nothing was started. Fix: use a name from the parameters cell (PlanConfig knobs and runbook options)."
        )
    return {name: namespace[name] for name in PARAMETER_NAMES if name in namespace}
