"""Issue 42 item 3: a deployment's per-role values are never overridden by a runbook default.

The Ascend 1P1D in128k deployment sets --mem-fraction-static 0.78 on its prefill server and 0.82 on
its decode server (params/deployments). The ascend-a3 runbook's parameters cell used to carry the
platform recipe's 0.662 (its mixed deployment's), which replaced both: a 47,278-token decode pool for
a deployment whose requests are 128k + 1k tokens. Planned through the runbook's own parameters (the
shipped cell, and an older copy still holding 0.662), each role keeps its own fraction and the pool
holds one whole request; a value the user chooses still overrides every role.
"""

from __future__ import annotations

import nbformat
import pytest

from kimi_runbooks import runbook
from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.plan import PlanConfig, plan

DEPLOYMENT = "ascend-a3-1p1d-16p-in128k-out1k"
REQUEST_TOKENS = 128 * 1024 + 1024  # the deployment's dataset: 128k in, 1k out


def _cell_parameters() -> dict:
    nb = nbformat.read(str(REPO_ROOT / "runbooks" / "ascend-a3.ipynb"), as_version=4)
    namespace: dict = {}
    exec(next(c for c in nb.cells if c.cell_type == "code").source, namespace)  # noqa: S102 - our generated cell
    return runbook.collect_parameters(namespace)


def _fractions(launch) -> dict[str, float]:
    return {n.role: float(n.argv[n.argv.index("--mem-fraction-static") + 1]) for n in launch.nodes}


@pytest.mark.parametrize("cell_value", ["shipped", 0.662], ids=["shipped-cell", "older-cell-with-recipe-0.662"])
def test_the_1p1d_in128k_rehearsal_keeps_each_roles_fraction_and_holds_a_128k_request(cell_value):
    params = {**_cell_parameters(), "deployment": DEPLOYMENT}
    if cell_value != "shipped":
        params["mem_fraction_static"] = cell_value
    config, _ = runbook.split_params(params)
    launch = plan(PlanConfig.model_validate(config))
    print(f"\n{cell_value}: fractions {_fractions(launch)}, decode KV pool {launch.memory.kv_pool_tokens} tokens")
    assert _fractions(launch) == {"prefill": 0.78, "decode": 0.82}
    assert launch.memory.kv_pool_tokens >= REQUEST_TOKENS, launch.memory.kv_pool_tokens


def test_a_value_the_user_chooses_still_overrides_every_role():
    assert load_catalog().platform("ascend-a3").recipe.mem_fraction_static == 0.662
    config, _ = runbook.split_params({**_cell_parameters(), "deployment": DEPLOYMENT, "mem_fraction_static": 0.7})
    assert _fractions(plan(PlanConfig.model_validate(config))) == {"prefill": 0.7, "decode": 0.7}
