"""Write runbooks/<platform>.ipynb (one per params/platforms/*.yaml) and notebooks/report.ipynb.

The runbooks' parameters cells are generated from each platform's default recipe, so they stay in
step with params/ (tests/test_runbooks.py regenerates them in memory and compares). Notebooks are
written without outputs. Run `python scripts/make_runbooks.py` after changing a recipe.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kimi_runbooks.catalog import Catalog, Platform, load_catalog  # noqa: E402
from kimi_runbooks.recipes import PlanConfig  # noqa: E402

CHECK_TAG = "nbval-check-output"
"""nbval's metadata tag for `# NBVAL_CHECK_OUTPUT`: compared under `pytest --nbval-lax`."""

CI_TIME_SCALE = 0.05
"""Emulator speed-up for the default (emulator) launcher; real launchers ignore it."""


def _nb(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, text in cells:
        if kind == "md":
            nb.cells.append(new_markdown_cell(text.strip()))
            continue
        cell = new_code_cell(text.strip())
        if kind == "parameters":
            cell.metadata["tags"] = ["parameters"]
        elif kind == "check":
            cell.metadata["tags"] = [CHECK_TAG]
        nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):  # stable ids keep regenerated notebooks byte-identical
        cell["id"] = f"cell-{i:02d}"
    return nb


def _comment(text: str) -> str:
    return f"  # {text}" if text else ""


def parameter_lines(platform: Platform, catalog: Catalog) -> list[str]:
    """`name = value  # why` for every PlanConfig knob and runbook option, recipe values filled in."""
    recipe = platform.recipe
    model = catalog.model(recipe.model)
    defaults = PlanConfig.model_fields
    recipe_values: dict[str, tuple[Any, str]] = {
        "platform": (platform.id, platform.name),
        "model": (recipe.model, f"params/models/{recipe.model}.yaml ({model.hf_id})"),
        "deployment": (recipe.deployment, "published multi-role deployment (params/deployments)"
                       if recipe.deployment else "None: single server"),
        "tp": (recipe.tp, "recipe"),
        "dp": (recipe.dp, "recipe" if recipe.dp else "None: no data parallelism"),
        "ep": (recipe.ep, "recipe" if recipe.ep else "None: no expert parallelism"),
        "enable_dp_attention": (recipe.enable_dp_attention, "recipe"),
        "quantization": (None, f"None: the model's ({model.quantization_flag or 'none'})"),
        "kv_cache_dtype": (recipe.kv_cache_dtype, "recipe" if recipe.kv_cache_dtype
                           else f"None: SGLang auto ({model.default_kv_cache_dtype} for this checkpoint)"),
        "mem_fraction_static": (recipe.mem_fraction_static, "recipe" if recipe.mem_fraction_static
                                else f"None: SGLang decides (planner assumes {platform.default_mem_fraction_static})"),
        "context_length": (recipe.context_length, "recipe" if recipe.context_length
                           else f"None: the model's ({model.max_context_length})"),
        "env": ({}, f"added to the recipe's env {dict(recipe.env)}" if recipe.env else "added to the recipe's env"),
        "extra_args": ([], f"added to the recipe's {list(recipe.extra_args)}" if recipe.extra_args
                       else "raw extra server arguments"),
        "api_key_env": (None, "NAME of the env var holding the API key (never the key itself)"),
    }
    lines = ["# Launch knobs (recipes.PlanConfig; defaults: this platform's recipe in "
             f"params/platforms/{platform.id}.yaml)"]
    for name, field in defaults.items():
        value, why = recipe_values.get(name, (field.get_default(call_default_factory=True), ""))
        lines.append(f"{name} = {value!r}{_comment(why)}")
    lines += [
        "",
        "# Runbook options",
        "launcher = 'emulator'  # emulator: CI or a laptop rehearsal; on the hardware: "
        f"{platform.launcher} (this platform's default), or local | docker | external | multi-node | slurm",
        "base_url = None  # for launcher external: the URL of the running server",
        "stages = ['deploy', 'invoke', 'speed', 'accuracy', 'report']",
        "scenario_set = 'smoke'  # params/scenarios: smoke (CI) or a published set",
        "eval_suites = None  # accuracy suites; None: the accuracy stage's smoke defaults",
        "run_dir = None  # None: outputs/<run id> (or $KIMI_RUNBOOKS_OUTPUTS/<run id>)",
        f"time_scale = {CI_TIME_SCALE!r}  # emulator only: <1 runs its latency model faster",
        "fail_on_error = True  # raise after the report when a stage or check failed",
        "stage_overrides = {}  # extra parameters per stage notebook, e.g. {'invoke': {'timeout': 60}}",
    ]
    return lines


def runbook(platform: Platform, catalog: Catalog) -> nbformat.NotebookNode:
    recipe = platform.recipe
    intro = f"""
# Kimi runbook: {platform.name}

One command stands up Kimi on {platform.name} with SGLang, proves every feature works, measures
speed and accuracy against the published numbers and leaves `report.html` in the run folder:

```
papermill runbooks/{platform.id}.ipynb out.ipynb                       # rehearsal on the emulator
papermill runbooks/{platform.id}.ipynb out.ipynb -p launcher {platform.launcher} -p scenario_set cookbook   # for real
```

The parameters below are this platform's recipe ({recipe.source}). Every knob is named as in
`recipes.PlanConfig`; override any with `-p name value`. The plan is validated first: a
configuration that breaks a rule stops here, with the rule, its fix and its source, before any
server starts. The stage notebooks then run in order (deploy, invoke, speed, accuracy), each
executed copy saved in `run_dir/notebooks/`; the server is always torn down; the report is rendered.
"""
    cells = [
        ("md", intro),
        ("parameters", "\n".join(parameter_lines(platform, catalog))),
        ("code", "from kimi_runbooks import runbook\n\nparams = runbook.collect_parameters(globals())"),
        ("md", "## The plan (validated before anything starts)"),
        ("check", "print(runbook.plan_text(params))"),
        ("md", "## Run the stages, tear down, render the report"),
        ("code", "result = runbook.run_runbook(params)"),
        ("md", "## Verdict"),
        ("check", "print(runbook.result_text(result))"),
        ("code", "print(f\"report: {result.report_html}\")"),
    ]
    return _nb(cells)


REPORT_CELLS = [
    ("md", """
# Run report

What one run did, for a reviewer without Jupyter: the verdict, the platform and plan, the manifest,
the feature checks, speed and accuracy against the published references, and the warnings.
Every number says where it came from: measured (with the run id), EMULATED, or reference (with its source).
"""),
    ("parameters", "run_dir = None  # the run folder to report on (outputs/<run id>)"),
    ("code", "from kimi_runbooks import report\n\nreport.setup_notebook()\ndata = report.collect(run_dir)\nreport.show_banner(data)"),
    ("md", "## Verdict"),
    ("check", "report.show_verdict(data)"),
    ("md", "## Warnings (security, skipped cells, regressions)"),
    ("code", "report.show_warnings(data)"),
    ("md", "## Platform and plan"),
    ("code", "report.show_plan(data)"),
    ("md", "## Manifest (what ran where)"),
    ("code", "report.show_manifest(data)"),
    ("md", "## Feature checks (invoke)"),
    ("code", "report.show_invoke(data)"),
    ("md", "## Speed against published references"),
    ("code", "report.show_speed(data)"),
    ("md", "## Accuracy against published references"),
    ("code", "report.show_accuracy(data)"),
    ("md", "## Stages"),
    ("code", "report.show_stages(data)"),
]


def outputs(catalog: Catalog | None = None) -> dict[str, nbformat.NotebookNode]:
    """Relative path -> notebook, for every file this script writes."""
    catalog = catalog or load_catalog()
    out = {f"runbooks/{pid}.ipynb": runbook(p, catalog) for pid, p in sorted(catalog.platforms.items())}
    out["notebooks/report.ipynb"] = _nb(REPORT_CELLS)
    return out


def main() -> None:
    for rel, nb in outputs().items():
        path = ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(path))
        print(f"wrote {rel}")


if __name__ == "__main__":
    main()
