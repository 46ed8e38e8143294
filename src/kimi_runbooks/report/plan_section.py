"""The report's plan section: the launch command, its knobs, the memory estimate (a hybrid model's two
pools) and, for a CPU rehearsal, what became of each flag."""

from __future__ import annotations

from typing import Any

from ..origin import REHEARSAL_LABEL
from ..rundir import RunFolder
from .collect import RunData
from .html_parts import Column, details, esc, pre, table
from .tables import external_table


def plan_section(data: RunData) -> str:
    if data.external:  # no launch command or memory plan: none was used
        rows = [{"item": str(k), "value": v} for k, v in external_table(data).itertuples(index=False)]
        return "<h3>External server (attached, not launched by this run)</h3>" + table(
            [Column("item", "item"), Column("value", "value")], rows
        )
    if not data.plan:
        return '<p class="note">No plan recorded in this run folder.</p>'
    parts = []
    parts.append("<p>Launch command (secrets redacted):</p>" + pre(str(data.plan.get("command"))))
    if data.plan.get("docker"):
        parts.append(details("docker form", pre(str(data.plan["docker"]))))
    config = {k: v for k, v in ((data.plan.get("config") or {}).items()) if v not in (None, [], {}, "")}
    knobs = table(
        [Column("knob", "knob"), Column("value", "value")], [{"knob": k, "value": v} for k, v in config.items()]
    )
    parts.append(details(f"knobs ({len(config)})", knobs))
    plan_memory = data.plan.get("memory") or {}
    memory = {k: v for k, v in plan_memory.items() if k not in ("notes", "state_pool", "levers")}
    mem_rows = [{"item": k, "value": v} for k, v in memory.items()]
    parts.append(
        details(
            "memory and KV cache per device (estimate)",
            table([Column("item", "item"), Column("value", "value", "num")], mem_rows),
        )
    )
    parts.append(pools_section(plan_memory))
    return "".join(parts) + rehearsal_section(data)


REHEARSAL_COLUMNS = [
    Column("item", "flag or env"),
    Column("values", "plan's value"),
    Column("action", "on the CPU"),
    Column("reason", "why"),
]


def rehearsal_section(data: RunData) -> str:
    """A CPU rehearsal: the tiny model it served and what became of each of the plan's flags."""
    doc = RunFolder(data.run_dir).read_json(RunFolder.REHEARSAL) if data.rehearsal else None
    if not isinstance(doc, dict):
        return ""
    tiny = doc.get("tiny_model") or {}
    flags = [f for f in doc.get("flags") or [] if isinstance(f, dict)]
    rows = [{**f, "values": " ".join(map(str, f.get("values") or []))} for f in flags]
    skipped = sum(f.get("action") == "not applicable" for f in flags)
    notes = "".join(f"<li>{esc(str(n))}</li>" for n in tiny.get("notes") or [])
    shape = ", ".join(f"{k} {v}" for k, v in (tiny.get("shape") or {}).items())
    fleet = doc.get("fleet") if isinstance(doc.get("fleet"), dict) else None
    behind = ""
    if fleet:
        members = [m for m in fleet.get("members") or [] if isinstance(m, dict)]
        router = [str(a) for a in fleet.get("router") or []]
        policy = router[router.index("--policy") + 1] if "--policy" in router[:-1] else "its default"
        behind = (
            f" {len(members)} such servers ({esc(', '.join(str(m.get('name')) for m in members))}) served it behind "
            f"the real sglang-router (policy {esc(policy)}); the flags below are the first one's."
        )
    return (
        f"<h3>CPU rehearsal ({esc(REHEARSAL_LABEL)})</h3>"
        f'<p class="note">SGLang served a tiny random-weight {esc(str(tiny.get("architecture")))} '
        f"({esc(str(tiny.get('parameters')))} parameters: {esc(shape)}) on this machine's CPU, context "
        f"{esc(str(doc.get('context_length')))}, KV pool {esc(str(doc.get('max_total_tokens')))} tokens.{behind}</p>"
        f"<ul>{notes}</ul>"
        + details(
            f"the plan's flags on the CPU ({skipped} not applicable, each with its reason)",
            table(REHEARSAL_COLUMNS, rows),
        )
    )


POOL_COLUMNS = [
    Column("pool", "pool"),
    Column("gib", "GiB per device", "num"),
    Column("holds", "holds"),
    Column("admits", "requests / tokens it admits", "int"),
]
LEVER_COLUMNS = [
    Column("lever", "lever (alone, on top of the plan)"),
    Column("slots", "state slots", "int"),
    Column("state_requests", "requests the state pool admits", "int"),
    Column("kv_tokens", "MLA KV tokens", "int"),
]


def pools_section(memory: dict[str, Any]) -> str:
    """A hybrid model's two pools (recurrent state per request slot; paged MLA KV) and the
    capacity levers, as the plan estimated them (plan.memory / plan.state_pool); empty otherwise."""
    pool = memory.get("state_pool")
    if not pool:
        return ""
    rows = [
        {
            "pool": f"{pool['kind']} recurrent state ({pool['layers']} layers, {pool['ssm_dtype']})",
            "gib": pool["state_pool_gib"],
            "holds": f"{pool['slots']} slots, {pool['slots_per_request']} per request ({pool['radix_strategy']})",
            "admits": pool["state_requests"],
        },
        {
            "pool": f"MLA KV ({memory.get('kv_cache_dtype')})",
            "gib": pool["kv_pool_gib"],
            "holds": f"{pool['kv_tokens']} tokens",
            "admits": pool["kv_tokens"],
        },
    ]
    capped = " (capped by the state pool)" if pool.get("capped_by_state") else ""
    head = (
        f"<h3>Two memory pools per device (estimate)</h3><p>Split by --mamba-full-memory-ratio "
        f"{pool['full_memory_ratio']}; max running requests {pool['max_running_requests']}{capped}. "
        "A live /server_info max_total_num_tokens replaces the KV side once a server is up.</p>"
    )
    levers = table(LEVER_COLUMNS, list(memory.get("levers") or []), "no levers left")
    return head + table(POOL_COLUMNS, rows) + details("capacity levers", levers)
