"""recipes.plan: validation verdicts, knob mapping, docker and multi-node forms."""

import pytest

from kimi_runbooks.catalog import UnknownIdError, load_catalog
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.shell import shell_command


def ids(p):
    return {r.id for r in p.errors}


def test_default_plans_of_every_platform_are_valid():
    catalog = load_catalog()
    for platform in catalog.platforms:
        p = plan({"platform": platform})
        assert p.ok, (platform, [str(e) for e in p.errors])


def test_amd_tp8_fails_with_the_aiter_reason_on_v059():
    p = plan({"platform": "mi350x", "tp": 8})
    assert "amd-aiter-mla-heads" in ids(p)
    assert "heads_per_gpu % 16" in str(p.errors[0])


def test_amd_tp8_rule_is_version_dependent():
    p = plan({"platform": "mi355x", "tp": 8, "nnodes": 2, "sglang_version": "0.5.23"})
    assert "amd-aiter-mla-heads" not in ids(p)
    assert "amd-aiter-mla-heads-padded" not in ids(p)
    # CDNA3 gets the small-head warning on new versions
    p3 = plan({"platform": "mi300x", "tp": 8, "nnodes": 2, "sglang_version": "0.5.23"})
    assert "amd-aiter-small-heads-cdna3" in {w.id for w in p3.warnings}


def test_allow_turns_an_error_into_a_recorded_warning():
    p = plan({"platform": "mi350x", "tp": 8, "nnodes": 2, "allow": ["amd-aiter-mla-heads"]})
    assert p.ok
    (allowed,) = [w for w in p.warnings if w.id == "amd-aiter-mla-heads"]
    assert allowed.allowed


def test_allow_of_an_unknown_rule_is_an_error():
    assert "unknown-allow" in ids(plan({"platform": "h200", "allow": ["no-such-rule"]}))


def test_nvfp4_only_where_the_hardware_runs_it():
    assert "fp4-weights-need-hardware" in ids(plan({"platform": "h200", "model": "kimi-k2.6-nvfp4"}))
    assert "fp4-weights-need-hardware" in ids(plan({"platform": "mi355x", "model": "kimi-k2.6-nvfp4"}))
    for platform in ("b200", "b300", "gb300", "rtx-pro-6000"):
        assert plan({"platform": platform, "model": "kimi-k2.6-nvfp4"}).ok, platform


def test_eagle3_not_on_amd_and_ascend_needs_w4a8():
    assert "eagle3-not-on-amd" in ids(plan({"platform": "mi350x", "speculative": True}))
    assert "ascend-needs-w4a8" in ids(plan({"platform": "ascend-a3", "model": "kimi-k2.6"}))
    assert "w4a8-needs-ascend" in ids(plan({"platform": "h200", "model": "kimi-k2.6-w4a8"}))


def test_topology_rules():
    assert "devices-match" in ids(plan({"platform": "h200", "tp": 16}))
    assert "devices-match" in ids(plan({"platform": "mi300x", "tp": 8, "devices": 4}))
    assert "nodes-split-evenly" in ids(plan({"platform": "h200", "tp": 9, "nnodes": 2}))
    idle = plan({"platform": "b300", "tp": 4})  # half a node: valid, said, pinned
    assert idle.ok and "devices-idle" in {w.id for w in idle.warnings}
    assert "dp-divides-tp" in ids(plan({"platform": "h200", "dp": 3, "enable_dp_attention": True}))
    assert "dp-replicas-devices" in ids(plan({"platform": "b200", "model": "kimi-k2-instruct", "dp": 4}))
    assert "ep-divides-devices" in ids(plan({"platform": "h200", "ep": 3}))


def test_memory_and_context_rules():
    assert "context-within-model" in ids(plan({"platform": "h200", "context_length": 300_000}))
    assert "mem-fraction-range" in ids(plan({"platform": "h200", "mem_fraction_static": 1.2}))
    assert "weights-fit" in ids(plan({"platform": "rtx-pro-6000", "model": "kimi-k2-instruct"}))


def test_all_failures_reported_together():
    p = plan({"platform": "mi350x", "tp": 16, "speculative": True, "context_length": 10**6})
    assert {"amd-aiter-mla-heads", "eagle3-not-on-amd", "context-within-model", "devices-match"} <= ids(p)


def test_model_without_published_recipe_is_allowed_with_a_note():
    p = plan({"platform": "rtx-pro-6000", "model": "kimi-k2.6"})
    assert p.ok
    assert "no-published-recipe" in {w.id for w in p.warnings}


def test_unknown_ids_list_the_valid_ones():
    with pytest.raises(UnknownIdError, match="Valid platform ids: .*h200"):
        plan({"platform": "a100"})
    with pytest.raises(UnknownIdError, match="Valid model ids: .*kimi-k2.6"):
        plan({"platform": "h200", "model": "kimi"})


def test_api_key_is_a_reference_never_a_literal(monkeypatch):
    monkeypatch.setenv("MY_KEY", "s3cret-value")
    p = plan({"platform": "h200", "api_key_env": "MY_KEY"})
    assert "s3cret-value" not in p.command and "s3cret-value" not in (p.docker or "")
    assert '"${MY_KEY}"' in p.command
    assert "s3cret-value" in p.resolved_argv({"MY_KEY": "s3cret-value"})
    with pytest.raises(ValueError, match="NAME of an environment variable"):
        plan({"platform": "h200", "api_key_env": "sk-123 456"})


def test_bind_all_without_key_warns():
    p = plan({"platform": "h200", "host": "0.0.0.0"})
    assert "bind-all-without-key" in {w.id for w in p.warnings}
    assert p.base_url == "http://127.0.0.1:30000"


def test_docker_forms():
    amd = plan({"platform": "mi350x"})
    argv = amd.docker_argv
    for piece in (
        "--device=/dev/kfd",
        "--device=/dev/dri",
        "video",
        "--ipc=host",
        "--shm-size",
        "lmsysorg/sglang:v0.5.9-rocm700-mi35x",
        "SGLANG_USE_AITER=1",
    ):
        assert piece in argv, piece
    assert "127.0.0.1:30000:30000" in argv  # published on loopback only
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # inside the container
    nv = plan({"platform": "h200"}).docker_argv
    assert nv[nv.index("--gpus") + 1] == "all"
    assert plan({"platform": "ascend-a3"}).docker is None


@pytest.mark.parametrize(
    "fields",
    [
        {"platform": "h200", "tp": 16, "nnodes": 2, "node_ips": ["10.0.0.1", "10.0.0.2"]},
        {"platform": "h200", "tp": 16, "nnodes": 2},  # node 0's address left to the operator
        {"platform": "mi350x", "tp": 8, "nnodes": 2, "allow": ["amd-aiter-mla-heads"]},
    ],
)
def test_each_node_has_a_docker_form_whose_inner_command_is_that_nodes_argv(fields):
    """Issue 25 item 5: a 2-node plan printed one single-node docker form (h200: --tp 16 with no
    --nnodes/--node-rank/--dist-init-addr; mi350x: tp 8 on HIP_VISIBLE_DEVICES=0,1,2,3). The docker
    form's words after the image, as shlex reads them, must be that node's plan argv."""
    import shlex

    p = plan(fields)
    assert p.ok, p.errors
    assert p.docker is None and p.docker_argv is None  # no single-node form for a multi-node plan
    assert [n.node_rank for n in p.nodes] == [0, 1]
    for node in p.nodes:
        assert node.docker is not None and node.docker_argv is not None
        words = shlex.split(node.docker)
        image = words.index(p.docker_image)
        expected = shlex.split(shell_command(node.argv))
        assert words[image + 1 :] == expected, node.node_rank
        assert words[expected.index("--node-rank") + image + 2] == str(node.node_rank)
        given = {words[i + 1] for i, w in enumerate(words[:image]) if w == "-e"}
        assert given == set(shlex.split(shell_command(["x"], node.env))[:-1])  # NAME=value, as the node runs
        assert words[words.index("--network") + 1] == "host" and "-p" not in words[:image]
    assert len({n.docker for n in p.nodes}) == 2


def test_multi_node_commands_for_a_two_node_plan():
    p = plan({"platform": "h200", "tp": 16, "nnodes": 2, "node_ips": ["10.0.0.1", "10.0.0.2"]})
    assert p.ok, [str(e) for e in p.errors]
    assert [n.node_rank for n in p.nodes] == [0, 1]
    for n in p.nodes:
        a = n.argv
        assert a[a.index("--nnodes") + 1] == "2"
        assert a[a.index("--node-rank") + 1] == str(n.node_rank)
        assert a[a.index("--dist-init-addr") + 1] == "10.0.0.1:5000"


def test_ascend_default_is_the_published_multi_node_deployment():
    p = plan({"platform": "ascend-a3"})
    assert p.deployment is not None and p.deployment.id == "ascend-a3-16p-mixed-in64k-out1k"
    assert len(p.nodes) == 2 and p.ok, [str(e) for e in p.errors]
    assert "<" not in p.nodes[0].script  # no seed placeholders left
    assert "${MODEL_PATH:?" in p.nodes[0].script


def test_pd_deployment_has_prefill_decode_and_router():
    p = plan(
        {
            "platform": "ascend-a3",
            "deployment": "ascend-a3-1p1d-16p-in128k-out1k",
            "prefill_ip": "10.1.0.1",
            "decode_ip": "10.1.0.2",
        }
    )
    assert [n.role for n in p.nodes] == ["prefill", "decode"]
    assert p.router is not None
    assert "http://10.1.0.1:8000" in p.router.argv and "http://10.1.0.2:8001" in p.router.argv
    assert p.ok, [str(e) for e in p.errors]


def test_devices_used_is_what_serves_the_plan():
    assert plan({"platform": "h200"}).devices_used == 8
    assert plan({"platform": "mi350x"}).devices_used == 4
    assert plan({"platform": "ascend-a3"}).devices_used == 32  # 2 nodes x 16 dies
    assert plan({"platform": "ascend-a3", "deployment": "ascend-a3-8p-in3k5-out1k5-50ms"}).devices_used == 16
    assert plan({"platform": "ascend-a3", "deployment": "ascend-a3-1p1d-16p-in128k-out1k"}).devices_used == 32
    assert plan({"platform": "b200", "model": "kimi-k2-instruct", "dp": 4}).devices_used == 32  # 4 replicas
