"""The generated 8-GPU AMD runbooks: the device count is a parameter, and the plan they print shows
the tp-4 recipe, its pinned devices and the two-replica alternative."""

import nbformat
import pytest

from kimi_runbooks import runbook
from kimi_runbooks.paths import REPO_ROOT


def _runbook(platform_id: str) -> nbformat.NotebookNode:
    return nbformat.read(REPO_ROOT / "runbooks" / f"{platform_id}.ipynb", as_version=4)


def _params(platform_id: str) -> dict:
    (cell,) = [c for c in _runbook(platform_id).cells if "parameters" in c.metadata.get("tags", [])]
    scope: dict = {}
    exec(cell.source, scope)  # the shipped parameters cell: annotated assignments only
    return {k: v for k, v in scope.items() if not k.startswith("__") and k != "Optional"}


@pytest.mark.parametrize("platform_id", ["mi300x", "mi325x", "mi350x", "mi355x"])
def test_amd_runbook_plan_shows_the_recipe_and_the_two_replica_alternative(platform_id: str) -> None:
    params = _params(platform_id)
    assert params["devices"] is None and params["tp"] == 4
    text = runbook.plan_text(params)
    assert "--tp 4" in text and "HIP_VISIBLE_DEVICES=0,1,2,3" in text
    assert "2 replicas of tp 4 (--dp 2): VALID" in text and "verdict: VALID" in text
    quiet = runbook.plan_text({**params, "devices": 4})
    assert "alternatives" not in quiet and "VISIBLE_DEVICES" not in quiet


def test_the_amd_runbook_intro_says_how_to_use_the_other_devices() -> None:
    intro = _runbook("mi355x").cells[0].source
    assert "-p dp 2" in intro and "-p devices 4" in intro
    assert "-p devices" not in _runbook("h200").cells[0].source  # tp 8 on 8: nothing idle
