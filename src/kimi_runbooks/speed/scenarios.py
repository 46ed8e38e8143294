"""What the speed stage runs: scenarios by set or id, and the capacity and devices of the server."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..catalog import Catalog, Scenario, load_catalog
from ..plan import MemoryPlan, PlanConfig, plan
from ..plan.saved import SAVED, plan_from_record
from ..rundir import RunFolder


def select_scenarios(
    scenario_set: str | None = None, scenarios: Sequence[str] | None = None, catalog: Catalog | None = None
) -> list[Scenario]:
    """Scenarios by id (in the order given), else every scenario of a set; unknown ids fail clearly."""
    catalog = catalog or load_catalog()
    if scenarios:
        return [catalog.scenario(s) for s in scenarios]
    if not scenario_set:
        raise ValueError("no scenarios chosen. Fix: pass scenario_set (e.g. 'smoke') or a list of scenario ids.")
    if scenario_set not in catalog.scenario_sets:
        valid = ", ".join(sorted(catalog.scenario_sets))
        raise ValueError(
            f"unknown scenario set '{scenario_set}'. Valid sets: {valid}. "
            "Fix: pick one, or add params/scenarios/<set>.yaml."
        )
    return list(catalog.scenario_sets[scenario_set].scenarios)


def platform_capacity(
    platform: str | None,
    catalog: Catalog | None = None,
    run_dir: str | Path | None = None,
    target: Any = None,
) -> tuple[MemoryPlan | None, int | None]:
    """(memory plan, devices serving it) of the plan the deploy stage launched (the run's plan
    saved in run_dir, loaded, not planned again; a folder from before plans were saved: rebuilt from
    its manifest), else of the platform's default recipe; (None, None) without either, and for an
    external server, whose devices and memory no plan of ours describes (pass devices to get
    per-device figures; the KV capacity then comes from its live /server_info, if any)."""
    catalog = catalog or load_catalog()
    folder = RunFolder(run_dir) if run_dir else None
    manifest = folder.read_json(RunFolder.MANIFEST) if folder else None
    if getattr(target, "launcher", None) == "external" or (manifest or {}).get("launcher") == "external":
        return None, None
    record = folder.read_json(folder.plan) if folder and folder.plan.is_file() else None
    if isinstance(record, dict) and SAVED in record:
        launch = plan_from_record(record)
        return launch.memory, launch.devices_used
    config = ((manifest or {}).get("plan") or {}).get("config")
    if config:
        launch = plan(PlanConfig(**config), catalog)
        return launch.memory, launch.devices_used
    if not platform:
        return None, None
    launch = plan(PlanConfig(platform=platform), catalog)
    return launch.memory, launch.devices_used
