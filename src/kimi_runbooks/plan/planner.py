"""Turn a run configuration into a validated launch plan: the planner's pipeline.

`plan(config)` picks the layout: a published multi-role deployment (params/deployments/, the
prefill, decode and router commands: deployments.py), N replicas behind sglang-router (fleet.py)
or one server, planned by `_plan_single` a step a line: the user's extra arguments read (args.py),
then cell (cookbook.py) -> knobs (knobs.py) -> args (args.py) -> rules (server_rules.py) ->
LaunchPlan (commands.py). Every knob maps to its SGLang flag in one table (`knobs.KNOB_FLAGS`);
`extra_args` are folded in as SGLang reads them (catalog/flags.py: the last occurrence wins; a
knob's flag is refused with the knob to use, and its value is what the rules judge). All rule
failures are collected; nothing raises for a bad configuration, so callers can print every
problem at once. When a one-node plan leaves devices idle, it offers alternatives that use them.
"""

from __future__ import annotations

from typing import Any

from ..catalog import Catalog, Model, Platform, load_catalog
from .args import launch_args, read_user_args
from .commands import build_launch_plan
from .config import PlanConfig
from .cookbook import cell_config, choose_cell
from .deployments import plan_deployment
from .fleet import ROUTER_SOURCE, plan_fleet
from .knobs import ResolvedKnobs, resolve_knobs
from .launch_plan import Alternative, LaunchPlan
from .rules import RuleResult
from .server_rules import check_server


def plan(config: PlanConfig | dict[str, Any], catalog: Catalog | None = None) -> LaunchPlan:
    """Validate `config` against params/ and build every command; see the module docstring.

    Unknown platform, model or deployment ids raise `UnknownIdError` (listing the valid ids),
    since no plan can be built without them; every other problem lands in `plan.errors`.
    """
    catalog = catalog or load_catalog()
    if isinstance(config, dict):
        config = PlanConfig.model_validate(config)
    platform = catalog.platform(config.platform)
    deployment_id = config.deployment
    if deployment_id is None and config.model in (None, platform.recipe.model):
        deployment_id = platform.recipe.deployment
    if deployment_id:
        launch = plan_deployment(config, catalog, platform, catalog.deployment(deployment_id))
        if (config.replicas or 1) > 1:
            launch.results.insert(0, _replicas_of_deployment(config, deployment_id))
        return launch
    model = catalog.model(config.model or platform.recipe.model)
    return _plan_any(config, catalog, platform, model)


def _plan_any(config: PlanConfig, catalog: Catalog, platform: Platform, model: Model) -> LaunchPlan:
    """One server, or N of them behind sglang-router when `config.replicas` > 1 (fleet.py)."""
    if (config.replicas or 1) > 1:
        return plan_fleet(config, platform, lambda one: _plan_single(one, catalog, platform, model, alternatives=False))
    return _plan_single(config, catalog, platform, model)


def _replicas_of_deployment(config: PlanConfig, deployment_id: str) -> RuleResult:
    return RuleResult(
        id="replicas-deployment",
        severity="error",
        kind="rule",
        message=f"replicas={config.replicas} applies to one-server plans; deployment {deployment_id} has its own roles",
        fix="drop replicas (the deployment's router command fronts its roles), or plan a model without a deployment",
        source=ROUTER_SOURCE,
    )


def _plan_single(
    config: PlanConfig, catalog: Catalog, platform: Platform, model: Model, *, alternatives: bool = True
) -> LaunchPlan:
    """The pipeline for one server, a step a line (plan/__init__.py names each step's module)."""
    user = read_user_args(config)
    choice = choose_cell(model, platform, user.config)
    config = cell_config(user.config, choice.cell, model) if choice.cell is not None else user.config
    knobs = resolve_knobs(config, platform, model)
    args = launch_args(user, config, choice, knobs, model, platform)
    checked = check_server(config, catalog, platform, model, knobs, args, choice, user.refused)
    launch = build_launch_plan(config, platform, model, knobs, choice, args, user.leading, checked)
    if alternatives and checked.facts["idle_devices"] > 0 and knobs.nnodes == 1:
        launch.alternatives = _alternatives(config, catalog, platform, model, knobs)
    return launch


def _alternatives(
    config: PlanConfig, catalog: Catalog, platform: Platform, model: Model, knobs: ResolvedKnobs
) -> list[Alternative]:
    """Ways to use the whole node when the plan leaves devices idle: whole replicas behind SGLang's
    data-parallel router (`--dp N`), and one larger tp group where the rules at this version allow it."""
    found: list[Alternative] = []
    group = knobs.tp * (knobs.pp or 1)
    devices = knobs.devices_per_node
    base = config.model_dump(exclude={"device_ids"})
    if knobs.replicas == 1 and not knobs.enable_dp_attention and devices // group >= 2:
        replicas = devices // group
        found.append(
            _alternative(
                f"{replicas} replicas of tp {group} (--dp {replicas})",
                f"SGLang's data-parallel router (--dp {replicas} without --enable-dp-attention) starts {replicas} "
                f"copies of the tp {group} server and spreads requests over them: about {replicas}x the throughput "
                "and KV pool, the same latency per request",
                {**base, "dp": replicas, "enable_dp_attention": None},
                catalog,
                platform,
                model,
            )
        )
        found.append(
            _alternative(
                f"{replicas} replicas of tp {group} behind sglang-router (cache-aware)",
                f"{replicas} separate tp {group} servers, each on its own devices and port, behind SGLang's router "
                "(sglang-router, --policy cache_aware): it sends a request to the replica whose radix cache holds "
                "its longest prefix, so agentic, multi-turn and shared-prefix traffic keeps its cache hits; "
                "a replica can restart alone",
                {**base, "replicas": replicas, "router_policy": "cache_aware"},
                catalog,
                platform,
                model,
            )
        )
    if (knobs.pp or 1) == 1 and knobs.replicas == 1 and devices > knobs.tp:
        alt = _alternative(
            f"tp {devices} (one server on all {devices} devices)",
            f"one tp {devices} group: the weights spread over {devices} devices, leaving more memory per device "
            "for the KV pool and lower latency per token",
            {**base, "tp": devices},
            catalog,
            platform,
            model,
        )
        found.append(alt)
    return found


def _alternative(
    title: str, why: str, fields: dict[str, Any], catalog: Catalog, platform: Platform, model: Model
) -> Alternative:
    config = PlanConfig.model_validate(fields)
    if (config.replicas or 1) > 1:
        alt_plan = _plan_any(config, catalog, platform, model)
    else:
        alt_plan = _plan_single(config, catalog, platform, model, alternatives=False)
    refused = [e.id for e in alt_plan.errors]
    return Alternative(title, why, alt_plan if not refused else None, refused)
