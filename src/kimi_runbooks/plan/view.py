"""Show a launch plan: as text (CLI, headless notebooks) and as a live ipywidgets form.

The widget calls the same `plan.planner.plan` as the CLI, so what the form shows is exactly what a
runbook would launch.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ..catalog import Catalog
from .config import PlanConfig, validation_text
from .launch_plan import LaunchPlan
from .memory import MemoryPlan
from .planner import plan


def format_plan(p: LaunchPlan) -> str:
    title = f"# {p.platform.name} / {p.model.id}" + (f" / {p.deployment.id}" if p.deployment else "")
    lines = [title, f"# SGLang {p.config.sglang_version} (selects which rules apply)"]
    if p.cookbook:
        lines.append(f"# cookbook: {p.cookbook}")
    if p.nodes:
        for node in p.nodes:
            where = (
                f"{node.role} {node.node_rank} (this node)"
                if node.role == "replica"
                else f"{node.role} node {node.node_rank}"
            )
            lines += [f"\n## {where}", node.command]
            if node.docker:
                lines += [f"\n## docker, {where}", node.docker]
        if p.router:
            lines += ["\n## router", p.router.command]
    else:
        lines += ["\n## command", p.command]
    if p.docker:
        lines += ["\n## docker", p.docker]
    if p.device_env:
        pinned = ", ".join(f"{k}={v}" for k, v in p.device_env.items())
        lines.append(f"\n## devices: {p.devices_used} in use, pinned with {pinned}")
    lines.append("\n## memory per device (estimate until a live /server_info replaces it)")
    for key, value in p.memory.as_dict().items():
        if key not in ("notes", "state_pool", "levers") and not (key == "replicas" and value == 1):
            lines.append(f"  {key:<24} {value}")
    lines += [f"  note: {note}" for note in p.memory.notes]
    lines += format_pools(p.memory)
    if p.warnings:
        lines.append("\n## warnings")
        lines += [f"  - {w}" for w in p.warnings]
    if p.version_changes:
        lines.append(f"\n## rules that differ from the default SGLang {p.version_changes[0].default_version}")
        lines += [f"  - {c}" for c in p.version_changes]
    lines.append("\n## verdict: " + ("VALID" if p.ok else f"INVALID ({len(p.errors)} errors)"))
    lines += [f"  - {e}" for e in p.errors]
    if p.alternatives:
        lines.append("\n## alternatives that use the idle devices")
        for alt in p.alternatives:
            lines.append(f"\n### {alt.title}: " + ("VALID" if alt.plan else "refused by " + ", ".join(alt.refused_by)))
            lines.append(f"  {alt.why}")
            if alt.plan is not None:
                mem = alt.plan.memory
                lines.append(
                    f"  memory per device: weights {mem.weights_gib_per_device:.1f} GiB, "
                    f"KV pool {mem.kv_budget_gib:.1f} GiB = {mem.kv_pool_tokens} tokens per pool, "
                    f"{mem.kv_pool_tokens_total} tokens over {mem.pools} pool(s)"
                )
                lines.append(alt.plan.command)
    return "\n".join(lines)


def format_pools(memory: MemoryPlan) -> list[str]:
    """A hybrid model's two pools per device and what each capacity lever would make of them."""
    pool = memory.state_pool
    if pool is None:
        return []
    gib = 1024**3
    lines = [
        "\n## two memory pools per device (estimate; SGLang's split of the same budget)",
        f"  state pool ({pool.kind}, {pool.layers} layers, attention tp {pool.attn_tp}, {pool.ssm_dtype} state): "
        f"{pool.state_pool_bytes / gib:.2f} GiB = {pool.slots} slots of {pool.bytes_per_slot / 2**20:.1f} MiB, "
        f"{pool.slots_per_request} per request ({pool.radix_strategy}) -> admits {pool.state_requests} requests",
        f"  MLA KV pool ({memory.kv_cache_dtype}, {memory.kv_bytes_per_token} B/token): "
        f"{pool.kv_rest_bytes / gib:.2f} GiB = {pool.kv_tokens} tokens",
        f"  split by --mamba-full-memory-ratio {pool.full_memory_ratio:g}; max running requests "
        f"{pool.max_running_requests}" + (" (capped by the state pool)" if pool.capped_by_state else ""),
    ]
    if pool.spec_state_bytes:
        lines.append(f"  speculative verify states: {pool.spec_state_bytes / gib:.2f} GiB")
    if memory.levers:
        head = f"  {'lever (alone, on top of this plan)':<48} {'state slots':>11} {'requests':>9} {'KV tokens':>10}"
        lines.append(head)
        for name, alt in memory.levers:
            lines.append(f"  {name:<48} {alt.slots:>11} {alt.state_requests:>9} {alt.kv_tokens:>10}")
    return lines


def format_rules(catalog: Catalog, sglang_version: str | None = None) -> str:
    """Every rule with its SGLang version range, scope and public source (`kimi-runbooks rules`)."""
    from .rules import parse_version

    lines = []
    for rule in catalog.rules:
        scope = rule.applies
        where = [
            f"{name}: {', '.join(values)}"
            for name, values in (
                ("vendors", scope.vendors),
                ("archs", scope.archs),
                ("platforms", scope.platforms),
                ("models", scope.models),
            )
            if values
        ]
        version = scope.sglang or "all versions"
        mark = ""
        if sglang_version and scope.sglang:
            from packaging.specifiers import SpecifierSet

            inside = SpecifierSet(scope.sglang).contains(parse_version(sglang_version), prereleases=True)
            mark = f" [{'applies' if inside else 'does not apply'} at {sglang_version}]"
        lines.append(
            f"{rule.id} ({rule.severity}, {rule.kind}) SGLang {version}{mark}"
            + (f"; {'; '.join(where)}" if where else "")
        )
        lines.append(f"  when: {rule.violation}")
        lines.append(f"  source: {rule.source}")
    return "\n".join(lines)


def plan_text(config: dict[str, Any] | PlanConfig) -> str:
    """The plan of `config` as text; an unknown id or bad value becomes a readable error line."""
    try:
        return format_plan(plan(config))
    except (ValueError, KeyError) as exc:  # pydantic ValidationError and UnknownIdError are ValueErrors
        return f"## verdict: INVALID\n  - {readable_error(exc)}"


def readable_error(exc: Exception) -> str:
    """A bad parameter as "field: what is wrong", not pydantic's multi-line banner and help URL."""
    return validation_text(exc) if isinstance(exc, ValidationError) else str(exc)
