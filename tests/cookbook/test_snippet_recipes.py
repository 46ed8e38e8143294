"""The K2.5 / K2.7-Code deployment snippets as the plan's knobs (cookbook/snippet_recipes.py): the
page's default command on each hardware becomes the model's recipe there, instead of Kimi-K2.6's."""

from __future__ import annotations

import pytest

from kimi_runbooks.catalog import ParamsError, load_catalog
from kimi_runbooks.cookbook.snippet_recipes import snippet_recipe
from kimi_runbooks.plan import plan

CATALOG = load_catalog()


def test_k25_on_amd_takes_its_pages_knobs_not_k26s() -> None:
    model, platform = CATALOG.model("kimi-k2.5"), CATALOG.platform("mi355x")
    recipe = model.recipe_on(platform)
    assert recipe is not platform.recipe and recipe.model == "kimi-k2.5"
    assert (recipe.tp, recipe.mem_fraction_static, recipe.kv_cache_dtype) == (4, None, "fp8_e4m3")
    assert recipe.env == {"SGLANG_USE_AITER": "1", "SGLANG_ROCM_FUSED_DECODE_MLA": "0"}
    assert "kimi-k25-deployment.jsx at fb3022eb" in recipe.source
    launch = plan({"platform": "mi355x", "model": "kimi-k2.5"})
    assert launch.ok, [str(e) for e in launch.errors]
    assert "--mem-fraction-static" not in launch.argv and "--kv-cache-dtype" in launch.argv
    # the memory plan still estimates the platform's fraction where the command sets none
    assert launch.memory.mem_fraction_static == platform.default_mem_fraction_static


def test_k27_code_carries_the_pages_blackwell_attention_backend_only_there() -> None:
    model = CATALOG.model("kimi-k2.7-code")
    for hw in ("b300", "gb300"):
        assert model.recipe_on(CATALOG.platform(hw)).extra_args == ["--attention-backend", "tokenspeed_mla"]
    assert model.recipe_on(CATALOG.platform("h200")).extra_args == []
    assert model.recipe_on(CATALOG.platform("b200")) is CATALOG.platform("b200").recipe  # not on the page
    argv = plan({"platform": "gb300", "model": "kimi-k2.7-code", "sglang_version": "0.5.23"}).argv
    assert argv[argv.index("--attention-backend") + 1] == "tokenspeed_mla"
    assert "--attention-backend" not in plan({"platform": "h200", "model": "kimi-k2.7-code"}).argv


def test_only_snippets_marked_plan_knobs_give_recipes() -> None:
    with_recipes = {m.id for m in CATALOG.models.values() if m.snippet_recipes}
    assert with_recipes == {"kimi-k2.5", "kimi-k2.7-code"}  # K2's and K2.6's snippets: plan_knobs false


def test_a_snippet_command_the_plan_cannot_use_is_refused_with_the_fix() -> None:
    with pytest.raises(ParamsError, match="shows no command"):
        snippet_recipe("# Speculative Decoding is only supported on H200", "kimi-k2.5", "page (hardware=mi355x)")
    with pytest.raises(ParamsError, match="sets no --tp. Fix: mark the snippet `plan_knobs: false`"):
        snippet_recipe("sglang serve --model-path moonshotai/Kimi-K2.5", "kimi-k2.5", "page (hardware=h200)")
