"""The platform runbooks take `-p model kimi-k3` / `kimi-k2.7-code` at the plan level: the
parameters cell's recipe values (the platform's default model's) give way to K3's cookbook cell,
and the plan shows both memory pools."""

from __future__ import annotations

import nbformat
import pytest

from kimi_runbooks import runbook
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.view import format_plan

SEED = {"cookbook_revision": "seed"}  # the cells these checks name are the seed revision's (0722c4c0)

RUNBOOKS = REPO_ROOT / "runbooks"


def _params(platform: str, **injected: object) -> dict:
    nb = nbformat.read(str(RUNBOOKS / f"{platform}.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and "parameters" in c.metadata.get("tags", []))
    namespace: dict = {}
    exec(cell.source, namespace)  # noqa: S102 - our own generated parameters cell
    namespace.update(injected)  # what papermill's injected-parameters cell does
    return runbook.collect_parameters(namespace)


@pytest.mark.parametrize(("platform", "nodes"), [("h200", 2), ("b300", 1), ("gb300", 2)])
def test_runbook_plans_the_k3_cell(platform: str, nodes: int) -> None:
    config, _ = runbook.split_params(_params(platform, model="kimi-k3", **SEED))
    p = plan(config)
    assert p.ok, [str(e) for e in p.errors]
    assert p.cookbook.startswith(f"cell {platform} /") and (len(p.nodes) or 1) == nodes
    assert "--enable-metrics" in p.argv  # the runbook's default, added before --host
    text = format_plan(p)
    assert "state pool (kda" in text and "MLA KV pool" in text


def test_runbook_strategy_parameter() -> None:
    config, _ = runbook.split_params(_params("h200", model="kimi-k3", strategy="high-throughput", **SEED))
    p = plan(config)
    assert p.ok and "--mamba-radix-cache-strategy" in p.argv


def test_runbook_refuses_k3_where_the_cookbook_has_no_cell() -> None:
    config, _ = runbook.split_params(_params("mi355x", model="kimi-k3", **SEED))
    assert "no-verified-cookbook-cell" in [e.id for e in plan(config).errors]


def test_runbook_plans_k27_code_on_mi350x_with_the_recipe_values() -> None:
    config, _ = runbook.split_params(_params("mi350x", model="kimi-k2.7-code"))
    assert config["tp"] is None  # the cookbook snippet's recipe decides (cookbook/snippet_recipes.py), not the cell
    p = plan(config)
    assert p.ok, [str(e) for e in p.errors]
    assert p.argv[p.argv.index("--tp") + 1] == "4"  # the K2.7-Code page's AMD command (TP <= 4 there)
    assert p.argv[p.argv.index("--tool-call-parser") + 1] == "kimi_k2"


def test_runbook_plan_text_shows_the_plan_the_run_uses() -> None:
    text = runbook.plan_text(_params("h200", model="kimi-k3", **SEED))
    assert "## verdict: VALID" in text and "--tp 16" in text
