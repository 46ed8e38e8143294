"""Cells of runbooks/<platform>.ipynb, generated from each platform's default recipe in params/.

The parameters cell holds every PlanConfig knob with the platform's recipe values and why, so the
runbooks stay in step with params/ (the drift test regenerates them and compares).
"""

from __future__ import annotations

from typing import Any

from kimi_runbooks.catalog import Catalog, Platform
from kimi_runbooks.plan import PlanConfig
from kimi_runbooks.runbook import RunbookOptions

from .parameters import field_lines

CI_TIME_SCALE = 0.05
"""Emulator speed-up for the default (emulator) launcher; real launchers ignore it."""


def parameter_lines(platform: Platform, catalog: Catalog) -> list[str]:
    """`name = value  # why` for every PlanConfig knob and runbook option, recipe values filled in."""
    recipe = platform.recipe
    model = catalog.model(recipe.model)
    recipe_values: dict[str, tuple[Any, str]] = {
        "platform": (platform.id, platform.name),
        "model": (recipe.model, f"params/models/{recipe.model}.yaml ({model.hf_id})"),
        "deployment": (
            recipe.deployment,
            "published multi-role deployment (params/deployments)" if recipe.deployment else "None: single server",
        ),
        "devices": (
            None,
            f"None: {platform.devices_per_node} per node, the machine as shipped; the recipe uses {recipe.devices}"
            + (
                " (the plan pins them and lists the alternatives for the rest)"
                if recipe.devices < platform.devices
                else ""
            ),
        ),
        "tp": (recipe.tp, "recipe"),
        "dp": (recipe.dp, "recipe" if recipe.dp else "None: no data parallelism"),
        "ep": (recipe.ep, "recipe" if recipe.ep else "None: no expert parallelism"),
        "enable_dp_attention": (recipe.enable_dp_attention, "recipe"),
    }
    if recipe.deployment:  # each role's parallelism is its deployment's: the recipe's would override every role
        own = "None: each role's own (params/deployments/<deployment>.yaml); a value overrides every role"
        recipe_values |= {name: (None, own) for name in ("tp", "dp", "ep", "enable_dp_attention")}
    recipe_values |= {
        "quantization": (None, f"None: the model's ({model.quantization_flag or 'none'})"),
        "kv_cache_dtype": (
            recipe.kv_cache_dtype,
            "recipe"
            if recipe.kv_cache_dtype
            else f"None: SGLang auto ({model.default_kv_cache_dtype} for this checkpoint)",
        ),
        "mem_fraction_static": (
            recipe.mem_fraction_static,
            "recipe"
            if recipe.mem_fraction_static
            else f"None: SGLang decides (planner assumes {platform.default_mem_fraction_static})",
        ),
        "context_length": (
            recipe.context_length,
            "recipe" if recipe.context_length else f"None: the model's ({model.max_context_length})",
        ),
    }
    if recipe.deployment:  # each role's memory and cache flags are its deployment's, as its parallelism is
        own = "None: each role's own (params/deployments/<deployment>.yaml); a value overrides every role"
        recipe_values |= {name: (None, own) for name in ("kv_cache_dtype", "mem_fraction_static", "context_length")}
    recipe_values |= {
        "env": ({}, f"added to the recipe's env {dict(recipe.env)}" if recipe.env else "added to the recipe's env"),
        "extra_args": (
            [],
            f"added to the recipe's {list(recipe.extra_args)}" if recipe.extra_args else "raw extra server arguments",
        ),
        "api_key_env": (None, "NAME of the env var holding the API key (never the key itself)"),
        "strategy": (
            None,
            "models with cookbook cells (kimi-k3, kimi-k2.6): low-latency | balanced | high-throughput | "
            "long-context | default (PD prefill); None: the page's default",
        ),
        "enable_metrics": (
            True,
            "adds --enable-metrics so the speed stage sees queueing and the KV pool; False: the recipe exactly",
        ),
    }
    lines = [
        "from typing import Optional",
        "",
        "# Launch knobs (kimi_runbooks.plan.PlanConfig; defaults: this platform's recipe in "
        f"params/platforms/{platform.id}.yaml)",
    ]
    lines += field_lines(PlanConfig, recipe_values)
    lines += ["", "# Runbook options (kimi_runbooks.runbook.RunbookOptions)"]
    notebook_values: dict[str, tuple[Any, str]] = {
        "launcher": (
            "emulator",
            "emulator: CI or a laptop rehearsal; sglang-cpu: real SGLang 0.5.23 with a tiny model on this CPU; "
            f"on the hardware: {platform.launcher} (this platform's default), or local | docker | external | "
            "multi-node | slurm",
        ),
        "time_scale": (CI_TIME_SCALE, "emulator only: below 1 runs its latency model faster"),
    }
    lines += field_lines(RunbookOptions, notebook_values)
    return lines


def runbook_cells(platform: Platform, catalog: Catalog) -> list[tuple[str, str]]:
    recipe = platform.recipe
    intro = f"""
# Kimi runbook: {platform.name}

One command stands up Kimi on {platform.name} with SGLang, proves every feature works, measures
speed and accuracy against the published numbers and leaves `report.html` in the run folder:

```
papermill runbooks/{platform.id}.ipynb out.ipynb                       # rehearsal on the emulator
papermill runbooks/{platform.id}.ipynb out.ipynb -p launcher sglang-cpu  # rehearsal on real SGLang, tiny model, CPU
papermill runbooks/{platform.id}.ipynb out.ipynb -p launcher {platform.launcher} -p scenario_set cookbook   # for real
```

The parameters below are this platform's recipe ({recipe.source}). Every knob is named as in
`kimi_runbooks.plan.PlanConfig`; override any with `-p name value`. The plan is validated first: a
configuration that breaks a rule stops here, with the rule, its fix and its source, before any
server starts. The stage notebooks then run in order (deploy, invoke, speed, accuracy), each
executed copy saved in `run_dir/notebooks/`; the server is always torn down; the report is rendered.
"""
    if not recipe.deployment and recipe.devices < platform.devices:
        idle = platform.devices - recipe.devices
        intro += f"""
**Devices.** A {platform.name} node has {platform.devices_per_node} devices; this recipe (tp {recipe.tp}) uses
{recipe.devices}. The plan pins them and lists what the other {idle} could do, each as a valid plan with its
memory: another replica behind SGLang's data-parallel router (`-p dp {platform.devices // recipe.devices}`),
or one larger tp group where the SGLang version allows it (`-p sglang_version`). On a machine with only
{recipe.devices} devices pass `-p devices {recipe.devices}`; `-p device_ids "[4, 5, 6, 7]"` picks which ones.
"""
    cells = [
        ("md", intro),
        ("parameters", "\n".join(parameter_lines(platform, catalog))),
        (
            "code",
            "from kimi_runbooks import runbook\n\n"
            "runbook.brief_parameter_errors()  # a bad parameter ends the run with its message and fix, no traceback\n"
            "params = runbook.collect_parameters(globals())",
        ),
        ("md", "## The plan (validated before anything starts)"),
        ("check", "print(runbook.plan_text(params))"),
        ("md", "## Run the stages, tear down, render the report"),
        ("code", "result = runbook.run_runbook(params)"),
        ("md", "## Verdict"),
        ("check", "print(runbook.result_text(result))"),
        ("code", 'print(f"report: {result.report_html}")'),
    ]
    return cells
