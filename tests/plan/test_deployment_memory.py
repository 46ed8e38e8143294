"""A deployment role's server is sized by the same arithmetic as that server planned alone: its
pipeline stages, DP-attention pools, a hybrid model's state pool and its --context-length all reach
the memory plan (plan_deployment once dropped the last two, sizing Kimi-K3's state pool as if the
role had no flags)."""

from __future__ import annotations

from kimi_runbooks.catalog import ArgValue, Deployment, Role, load_catalog
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.plan.config import PlanConfig
from kimi_runbooks.plan.deployments import plan_deployment

CATALOG = load_catalog()


def _args(argv: list[str]) -> dict[str, ArgValue]:
    """`--flag value` pairs and bare switches of a server argv (after its two-word entrypoint)."""
    args: dict[str, ArgValue] = {}
    tokens = argv[2:]
    for i, token in enumerate(tokens):
        if token.startswith("--"):
            following = tokens[i + 1] if i + 1 < len(tokens) else "--"
            args[token] = True if following.startswith("--") else following
    return args


def _as_deployment(argv: list[str], platform: str, model: str) -> Deployment:
    role = Role(name="mixed", nodes=1, entrypoint=" ".join(argv[:2]), args=_args(argv))
    template = next(iter(CATALOG.deployments.values()))
    return template.model_copy(
        update={"id": "test-one-role", "platform": platform, "model": model, "roles": [role], "router": None}
    )


def test_a_hybrid_models_role_is_sized_like_the_same_server_planned_alone():
    options = {"platform": "b300", "model": "kimi-k3", "tp": 8, "context_length": 65536}
    single = make_plan({**options, "extra_args": ["--mamba-full-memory-ratio", "0.5"]})
    assert single.memory.state_pool is not None and single.memory.state_pool.full_memory_ratio == 0.5
    deployment = _as_deployment(single.argv, "b300", "kimi-k3")
    config = PlanConfig(platform="b300", deployment=deployment.id)
    role_plan = plan_deployment(config, CATALOG, CATALOG.platform("b300"), deployment)
    assert role_plan.memory == single.memory

    # and the flags matter: without them the role's pool is split differently
    default = make_plan({**options, "context_length": None})
    assert default.memory.state_pool != single.memory.state_pool
