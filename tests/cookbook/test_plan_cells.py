"""`kimi-runbooks plan` prints every current cookbook cell flag for flag, env and image included:
each Kimi-K3 cell of f795573d (unified and PD roles, the default DSPARK overlay and Non-Spec) and
each Kimi-K2.6 cell of 1d8c2d38, on the platforms params/ has; verified as the page says."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.view import format_plan

CATALOG = load_catalog()


def _expected_tokens(cell: dict[str, Any], port: int) -> list[str]:
    fill = {"{{MODEL_NAME}}": cell["model_name"], "{{HOST_IP}}": "127.0.0.1", "{{PORT}}": str(port)}
    return [fill.get(t, t) for flag in cell["flags"] for t in shlex.split(flag)]


TOKENSPEED = "--attention-backend tokenspeed_mla"


def _fields(cell: dict[str, Any]) -> dict[str, Any]:
    model = next(m.id for m in CATALOG.models.values() if m.hf_id == cell["model_name"])
    fields: dict[str, Any] = {"platform": cell["hardware"], "model": model, "strategy": cell["strategy"]}
    if cell.get("role"):
        fields["pd_role"] = cell["role"]
    if cell.get("speculative"):
        fields["speculative"] = cell["speculative"] != "none"
    return fields


PARSERS = ("--reasoning-parser", "--tool-call-parser")


def _without_added_parsers(argv: list[str], cell: dict[str, Any]) -> list[str]:
    """argv less the parsers the plan adds on top of a cell that has none (the page's Parsers row)."""
    out, skip = [], False
    for token in argv:
        if skip:
            skip = False
            continue
        if token in PARSERS and not any(f.startswith(token) for f in cell["flags"]):
            skip = True
            continue
        out.append(token)
    return out


def _check(cell: dict[str, Any]) -> None:
    launch = plan(_fields(cell))
    port = cell.get("port") or 30000
    expected = _expected_tokens(cell, port)
    assert _without_added_parsers(launch.argv[2:], cell)[: len(expected)] == expected, launch.command
    assert {k: v for k, v in launch.env.items() if k in cell.get("env", {})} == cell.get("env", {})
    text = format_plan(launch)
    for name in cell.get("multi_node_env", {}):
        assert f"{name}=" in text  # each node's own, filled from --ifname / --node-ip
    assert launch.docker_image == (cell.get("image") or launch.platform.docker_image)
    assert ("NOT verified" in launch.cookbook) is (not cell["verified"]), launch.cookbook
    assert launch.config.nnodes == cell["nodes"]
    # the page's cell plans VALID: rules know the backend and algorithm they concern (aiter heads,
    # EAGLE3 on AMD), DP attention keeps dp inside the tp group, and a cell is a published recipe
    assert launch.ok, [str(e) for e in launch.errors]
    assert "no-published-recipe" not in {w.id for w in launch.warnings}


def _cases(data_fixture: str) -> list[Any]:
    from kimi_runbooks.cookbook.kept_files import load_generated
    from kimi_runbooks.paths import PARAMS_DIR

    from .conftest import K3_NEW, K26

    page, commit = {"k3": ("kimi-k3", K3_NEW), "k26": ("kimi-k2.6", K26)}[data_fixture]
    cells = load_generated(PARAMS_DIR, page, commit)["cells"]
    on_params = [c for c in cells if c["hardware"] in CATALOG.platforms]
    return [
        pytest.param(
            c, id=f"{c['hardware']}-{c.get('role', c.get('quantization'))}-{c['strategy']}-{c.get('speculative', '')}"
        )
        for c in on_params
    ]


@pytest.mark.parametrize("cell", _cases("k3"))
def test_every_current_k3_cell_prints_flag_for_flag(cell: dict[str, Any]) -> None:
    _check(cell)


@pytest.mark.parametrize("cell", _cases("k26"))
def test_every_current_k26_cell_prints_flag_for_flag(cell: dict[str, Any]) -> None:
    _check(cell)


def test_tokenspeed_cells_are_refused_where_sglang_refuses_them() -> None:
    """The K2.6 B300 cell's --attention-backend tokenspeed_mla: no such backend before SGLang 0.5.12
    (said: the plans judge the default 0.5.9, the page targets a newer image), refused without FP8 KV
    up to 0.5.22, and 0.5.23 sets the FP8 KV itself (the memory plan counts it)."""
    at = {
        v: plan({"platform": "b300", "model": "kimi-k2.6", "sglang_version": v}) for v in ("0.5.9", "0.5.22", "0.5.23")
    }
    assert all(TOKENSPEED in p.command for p in at.values())
    assert at["0.5.9"].ok and "tokenspeed-mla-not-in-release" in {w.id for w in at["0.5.9"].warnings}
    assert {e.id for e in at["0.5.22"].errors} == {"tokenspeed-mla-needs-fp8-kv"}
    assert at["0.5.23"].ok and "tokenspeed-mla-sets-fp8-kv" in {w.id for w in at["0.5.23"].warnings}
    assert at["0.5.22"].memory.kv_cache_dtype == "bf16"
    assert at["0.5.23"].memory.kv_cache_dtype == "fp8_e4m3"
    assert at["0.5.23"].memory.kv_pool_tokens > 1.9 * at["0.5.22"].memory.kv_pool_tokens  # half the bytes a token
    said = plan({"platform": "b300", "model": "kimi-k2.6", "sglang_version": "0.5.22", "kv_cache_dtype": "fp8_e4m3"})
    assert said.ok, [str(e) for e in said.errors]


def test_k3_plans_the_default_dspark_overlay_unless_told_no_speculative() -> None:
    on = plan({"platform": "b300", "model": "kimi-k3", "strategy": "balanced"})
    off = plan({"platform": "b300", "model": "kimi-k3", "strategy": "balanced", "speculative": False})
    assert "--speculative-algorithm DSPARK" in on.command and "--enable-linear-replayssm-spec" in on.command
    assert "--speculative-algorithm" not in off.command
    assert "--mamba-full-memory-ratio 5.13" in on.command and "--mamba-full-memory-ratio 7.21" in off.command


def test_the_h100_cells_plan_flag_for_flag(k3_new: dict[str, Any]) -> None:
    h100 = [c for c in k3_new["cells"] if c["hardware"] == "h100"]
    assert len(h100) == 12  # unified and decode x low-latency, balanced, high-throughput x none, dspark
    for cell in h100:
        _check(cell)


def test_k26_high_throughput_is_dp_attention_and_blackwell_gets_tokenspeed_mla() -> None:
    ht = plan({"platform": "h200", "model": "kimi-k2.6", "strategy": "high-throughput"})
    assert "--tp 8 --dp 8 --enable-dp-attention" in ht.command
    b300 = plan({"platform": "b300", "model": "kimi-k2.6"})
    assert TOKENSPEED in b300.command
    assert "--reasoning-parser kimi_k2 --tool-call-parser kimi_k2" in b300.command  # the Parsers row, on by default


def test_seed_revision_prints_the_commands_the_project_reproduced() -> None:
    k3 = plan({"platform": "h200", "model": "kimi-k3", "cookbook_revision": "seed"})
    assert k3.argv[2:16] == [
        "--trust-remote-code",
        "--model-path",
        "moonshotai/Kimi-K3",
        "--tp",
        "16",
        "--ep-size",
        "16",
        "--moe-runner-backend",
        "marlin",
        "--decode-attention-backend",
        "flashmla",
        "--enable-symm-mem",
        "--mem-fraction-static",
        "0.85",
    ]
    assert "verified (0722c4c0)" not in k3.cookbook and "SGLang marks it verified" in k3.cookbook
    assert k3.docker_image == "lmsysorg/sglang:dev"
    k26 = plan({"platform": "h200", "model": "kimi-k2.6", "cookbook_revision": "seed"})
    assert k26.cookbook == ""  # the seed pages' knob-built plan: no cookbook cell


def test_an_unknown_revision_is_refused_with_the_kept_ones() -> None:
    from kimi_runbooks.catalog import ParamsError

    with pytest.raises(ParamsError, match="kept: f795573d, 0722c4c0.*Fix: pass 'seed', 'newest' or a commit prefix"):
        plan({"platform": "h200", "model": "kimi-k3", "cookbook_revision": "deadbeef"})


def test_a_platform_without_the_default_strategy_snaps_to_its_first_cell_as_the_page_does() -> None:
    mi355x = plan({"platform": "mi355x", "model": "kimi-k3"})  # the page's default is Low-Latency; MI35x has Balanced
    assert "mi355x / unified / balanced / 1 node / spec dspark" in mi355x.cookbook
    assert "--attention-backend triton" in mi355x.command and mi355x.docker_image == "lmsysorg/sglang:dev-rocm720-mi35x"
    assert "SGLANG_AITER_K3_OPT=1" in mi355x.command
