"""The machine as racked vs the recipe: devices per node, pinning, idle devices and the alternatives."""

import subprocess
import sys

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.view import format_plan


def errors(p):
    return {r.id for r in p.errors}


def warnings(p):
    return {r.id for r in p.warnings}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", *args], capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("platform", ["mi300x", "mi325x", "mi350x", "mi355x", "h200", "b200", "b300"])
def test_eight_gpu_servers_have_eight_devices_per_node(platform: str) -> None:
    assert load_catalog().platform(platform).devices_per_node == 8


def test_trays_and_dies() -> None:
    catalog = load_catalog()
    assert catalog.platform("gb300").devices_per_node == 4
    a3 = catalog.platform("ascend-a3")
    assert (a3.devices_per_node, a3.cards_per_node) == (16, 8)


def test_every_platform_cites_its_devices_per_node() -> None:
    for platform in load_catalog().platforms.values():
        assert platform.devices_per_node_source and "http" in platform.devices_per_node_source, platform.id


def test_mi355x_tp8_on_0523_is_valid() -> None:
    p = plan({"platform": "mi355x", "tp": 8, "sglang_version": "0.5.23"})
    assert p.ok, [str(e) for e in p.errors]
    assert p.device_env == {} and "devices-idle" not in warnings(p)  # the whole node: nothing to pin


@pytest.mark.parametrize(
    ("model", "tps"), [("kimi-k2.6", "--tp 1, 2 or 4 for kimi-k2.6"), ("kimi-k3", "--tp 1, 2, 3 or 6 for kimi-k3")]
)
def test_the_aiter_fix_names_the_tps_of_the_models_own_head_count(model: str, tps: str) -> None:
    """The fix once said "use --tp 4" whatever the model: K3's 96 heads give 24 per GPU at tp 4."""
    config = {"platform": "mi355x", "model": model, "tp": 8, "extra_args": ["--attention-backend", "aiter"]}
    (rule,) = [e for e in plan(config).errors if e.id == "amd-aiter-mla-heads"]
    assert tps in str(rule) and "--tp 4 (16" not in str(rule)


def test_mi355x_tp8_on_the_default_version_is_refused_by_the_aiter_rule_only() -> None:
    p = plan({"platform": "mi355x", "tp": 8})
    assert errors(p) == {"amd-aiter-mla-heads"}
    allowed = plan({"platform": "mi355x", "tp": 8, "allow": ["amd-aiter-mla-heads"]})
    assert allowed.ok and "amd-aiter-mla-heads" in warnings(allowed)


def test_a_tp4_recipe_on_an_eight_gpu_node_pins_four_and_lists_the_two_replica_alternative() -> None:
    p = plan({"platform": "mi300x"})
    assert p.ok
    assert "devices-idle" in warnings(p)
    assert p.device_env == {"HIP_VISIBLE_DEVICES": "0,1,2,3"}
    assert p.command.startswith("SGLANG_USE_AITER=1 SGLANG_ROCM_FUSED_DECODE_MLA=0 HIP_VISIBLE_DEVICES=0,1,2,3 ")
    assert p.docker_argv is not None and "HIP_VISIBLE_DEVICES=0,1,2,3" in p.docker_argv
    assert p.env == {"SGLANG_USE_AITER": "1", "SGLANG_ROCM_FUSED_DECODE_MLA": "0"}  # the recipe's, as published
    replicas, fleet, bigger = p.alternatives
    assert fleet.plan is not None and fleet.plan.ok and fleet.plan.router is not None  # the sglang-router form
    assert fleet.plan.memory.kv_pool_tokens_total == 2 * p.memory.kv_pool_tokens
    assert replicas.plan is not None and replicas.plan.ok
    assert replicas.plan.argv[replicas.plan.argv.index("--dp") + 1] == "2"
    assert replicas.plan.devices_used == 8 and replicas.plan.device_env == {}
    assert replicas.plan.memory.kv_pool_tokens_total == 2 * p.memory.kv_pool_tokens
    # tp 8 on MI300X needs the padded aiter backend: refused at 0.5.9, with the rule named
    assert bigger.plan is None and bigger.refused_by == ["amd-aiter-mla-heads"]
    text = format_plan(p)
    assert "2 replicas of tp 4 (--dp 2): VALID" in text and "HIP_VISIBLE_DEVICES=0,1,2,3" in text


def test_the_larger_tp_alternative_is_valid_where_the_version_allows_it() -> None:
    p = plan({"platform": "mi355x", "sglang_version": "0.5.23"})
    titles = {a.title: a for a in p.alternatives}
    tp8 = titles["tp 8 (one server on all 8 devices)"]
    assert tp8.plan is not None and tp8.plan.ok
    assert tp8.plan.memory.kv_pool_tokens > p.memory.kv_pool_tokens  # half the weights per device


def test_devices_4_silences_the_idle_warning() -> None:
    p = plan({"platform": "mi300x", "devices": 4})
    assert p.ok and "devices-idle" not in warnings(p)
    assert p.device_env == {} and p.alternatives == []


def test_device_ids_pin_the_named_devices_and_must_match_the_plan() -> None:
    p = plan({"platform": "mi355x", "device_ids": [4, 5, 6, 7]})
    assert p.ok and p.device_env == {"HIP_VISIBLE_DEVICES": "4,5,6,7"}
    assert "device-ids-match" in errors(plan({"platform": "mi355x", "device_ids": [0, 1]}))
    assert "device-ids-match" in errors(plan({"platform": "mi355x", "device_ids": [5, 6, 7, 8]}))


def test_nvidia_pins_with_cuda_visible_devices() -> None:
    p = plan({"platform": "b300", "tp": 4})
    assert p.device_env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in p.command


def test_a_user_set_visible_devices_variable_is_kept() -> None:
    p = plan({"platform": "mi300x", "env": {"HIP_VISIBLE_DEVICES": "4,5,6,7"}})
    assert p.device_env == {} and p.env["HIP_VISIBLE_DEVICES"] == "4,5,6,7"


def test_the_perf_facts_count_the_devices_the_plan_uses() -> None:
    assert plan({"platform": "mi300x"}).devices_used == 4
    assert plan({"platform": "mi300x", "dp": 2}).devices_used == 8


def test_cli_devices_and_alternatives() -> None:
    loud = cli("plan", "--platform", "mi300x")
    assert loud.returncode == 0 and "devices-idle" in loud.stdout and "2 replicas of tp 4" in loud.stdout
    quiet = cli("plan", "--platform", "mi300x", "--devices", "4")
    assert quiet.returncode == 0 and "devices-idle" not in quiet.stdout and "VISIBLE_DEVICES" not in quiet.stdout
    bad = cli("plan", "--platform", "mi300x", "--device-ids", "a,b")
    assert bad.returncode == 2 and "--device-ids 4,5,6,7" in bad.stderr
