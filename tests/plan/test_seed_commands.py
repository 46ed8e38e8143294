"""Every launch command the seeds publish is reproduced by recipes.plan (flags and env, any order).

The fixtures under tests/fixtures/seed_commands/ are the seeds' commands verbatim; each case here
states the same configuration as plan knobs, the way a user would ask for it.
"""

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.catalog.flags import canonical_flag
from kimi_runbooks.plan import plan
from tests.support import FIXTURES
from tests.support.seedcmd import find_commands, parse_shell_commands, substitute

SEED_FIXTURES = FIXTURES / "seed_commands"
SEED_TAIL = {"host": "0.0.0.0", "cookbook_revision": "seed"}  # the seed pages' revision (issue 41 item 5)

CASES = {
    "k26-h200-plain.sh": dict(platform="h200", port=30000, reasoning_parser=None, tool_call_parser=None, **SEED_TAIL),
    "k26-h200-eagle3.sh": dict(platform="h200", speculative=True, port=30000, **SEED_TAIL),
    "k26-b300-nvfp4-eagle3.sh": dict(
        platform="b300", model="kimi-k2.6-nvfp4", speculative=True, port=30000, **SEED_TAIL
    ),
    "k26-gb300-nvfp4-eagle3.sh": dict(
        platform="gb300", model="kimi-k2.6-nvfp4", speculative=True, port=30000, **SEED_TAIL
    ),
    "k26-mi350x.sh": dict(platform="mi350x", port=30000, **SEED_TAIL),
    "k2-thinking-reasoning-parser.sh": dict(
        platform="b200",
        model="kimi-k2-thinking",
        tool_call_parser=None,
        trust_remote_code=False,
        port=8000,
        **SEED_TAIL,
    ),
    "k2-instruct-tool-parser.sh": dict(platform="b200", model="kimi-k2-instruct", port=8000, **SEED_TAIL),
    "k2-b200-tp8-dp4.sh": dict(
        platform="b200",
        model="kimi-k2-instruct",
        dp=4,
        enable_dp_attention=True,
        tool_call_parser=None,
        port=8000,
        **SEED_TAIL,
    ),
    "k2-b200-tp8-dp4-ep4.sh": dict(
        platform="b200",
        model="kimi-k2-instruct",
        dp=4,
        ep=4,
        enable_dp_attention=True,
        tool_call_parser=None,
        port=8000,
        **SEED_TAIL,
    ),
    "rtx-pro-6000-nvfp4.sh": dict(
        platform="rtx-pro-6000", served_model_name="Kimi-K2.6-NVFP4", api_key_env="KIMI_API_KEY", port=8000, **SEED_TAIL
    ),
}


def _flags(argv: list[str]) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    current = None
    for token in argv:
        if token.startswith("--"):
            current = canonical_flag(token)
            flags[current] = []
        elif current is not None:
            flags[current].append(token)
    return flags


def _seed_command(name: str):
    text = (SEED_FIXTURES / "nvidia_amd" / name).read_text()
    text = substitute(text, [("<redacted>", "${KIMI_API_KEY}")])
    commands = [c for c in parse_shell_commands(text) if "sglang" in c.program]
    assert len(commands) == 1, name
    return commands[0]


def test_every_fixture_has_a_case():
    assert sorted(p.name for p in (SEED_FIXTURES / "nvidia_amd").glob("*.sh")) == sorted(
        [*CASES, "k2-b200-gsm8k-tp8-dp4.sh"]
    )


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_plan_reproduces_seed_command(fixture):
    seed = _seed_command(fixture)
    launch = plan(CASES[fixture])
    expected = {canonical_flag(k): v for k, v in seed.flags.items()}
    got = _flags(launch.argv)
    assert got == expected
    assert launch.env == {k: v for k, v in seed.env.items()}
    assert launch.ok, [str(e) for e in launch.errors]


def test_gsm8k_server_without_dp_attention_is_reproduced_but_flagged():
    # seed 001's GSM8K server passes --dp 4 without --enable-dp-attention on 8 GPUs: SGLang would
    # start 4 tp-8 replicas (32 GPUs). The plan reproduces the flags and says why it cannot start.
    seed = _seed_command("k2-b200-gsm8k-tp8-dp4.sh")
    launch = plan(dict(platform="b200", model="kimi-k2-instruct", dp=4, tool_call_parser=None, port=8000, **SEED_TAIL))
    assert _flags(launch.argv) == {canonical_flag(k): v for k, v in seed.flags.items()}
    assert [e.id for e in launch.errors] == ["dp-replicas-devices"]


def _deployment_cases():
    return sorted(load_catalog().deployments)


@pytest.mark.parametrize("deployment_id", _deployment_cases())
def test_plan_reproduces_ascend_deployment(deployment_id):
    """Each Ascend role's flags and env, and the router's flags, equal the seed's script."""
    text = (SEED_FIXTURES / "ascend" / f"{deployment_id}.sh").read_text()
    text = text.split("# bench:")[0]
    launch = plan(
        {
            "platform": "ascend-a3",
            "deployment": deployment_id,
            "model_path": "$MODEL_PATH",
            "draft_model_path": "$DRAFT_MODEL_PATH",
            "ifname": "eth0",  # the seed writes <network-interface>, which no interface is called
        }
    )
    assert launch.ok, [str(e) for e in launch.errors]
    seed_servers = find_commands(parse_shell_commands(text), "sglang.launch_server")
    roles = {n.role for n in launch.nodes}
    plan_servers = [n for n in launch.nodes if n.node_rank == 0]
    assert len(seed_servers) == len(plan_servers) == len(roles)
    for seed, node in zip(seed_servers, plan_servers):
        seed_flags = {canonical_flag(k): v for k, v in seed.flags.items()}
        plan_flags = _flags(node.argv)
        assert set(plan_flags) == set(seed_flags), node.role
        for flag, values in seed_flags.items():
            if any(v.startswith(("$", "<")) or "${" in v for v in values):
                continue  # node addresses: shell variables in the seed, parameters in the plan
            assert plan_flags[flag] == values, (node.role, flag)
        seed_env = {k: v for k, v in seed.env.items() if "<" not in v}
        assert {k: node.env[k] for k in seed_env} == seed_env, node.role
        assert set(node.env) == set(seed.env), node.role
    seed_routers = find_commands(parse_shell_commands(text), "sglang_router.launch_router")
    if seed_routers:
        assert launch.router is not None
        assert set(_flags(launch.router.argv)) == set(seed_routers[0].flags)
    else:
        assert launch.router is None
