"""The speed stage: run(folder, options) runs the chosen scenarios against the folder's server (or
options.base_url), appends each result to bench.jsonl as it finishes, and returns what the
notebook shows beside them (the server, platform, scenarios and device count it ran with)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..catalog.scenario_models import Scenario
from ..rundir import RunFolder
from ..target.locate import RunHandle, resolve_target
from .options import SpeedOptions
from .run import run_scenarios
from .scenarios import platform_capacity, select_scenarios
from .stage_options import SpeedStageOptions
from .tokens import stage_tokenizer


@dataclass(frozen=True)
class SpeedStageResult:
    """What the speed stage ran and measured."""

    target: RunHandle
    platform: str | None
    scenarios: list[Scenario]
    devices: int | None
    results: pd.DataFrame


def run(folder: RunFolder, options: SpeedStageOptions) -> SpeedStageResult:
    """The speed stage: the scenarios of options.scenarios (else options.scenario_set) run in order
    against the folder's server, checked against the plan's KV capacity; a rerun resumes."""
    o = options
    folder.add_secret_env(o.api_key_env)
    target = resolve_target(folder, o.base_url, o.model, o.api_key_env, o.platform)
    platform = o.platform or target.platform
    chosen = select_scenarios(o.scenario_set, o.scenarios)
    memory_plan, platform_devices = platform_capacity(platform, run_dir=folder.path, target=target)
    devices = o.devices or platform_devices
    tokenizer = stage_tokenizer(folder, target, o.tokenizer, o.offline)
    kind = "EMULATED" if target.emulated else "real"
    print(f"server {target.base_url} ({kind}), model {target.model}, platform {platform}, devices {devices}")
    print(f"{len(chosen)} scenarios: {', '.join(s.id for s in chosen)}")
    settings = SpeedOptions(
        tokenizer=tokenizer,
        offline=o.offline,
        command_prefix=o.command_prefix,
        python=o.bench_python,
        dataset_path=o.dataset_path,
        timeout_s=o.timeout_s,
        resume=o.resume,
        memory_plan=memory_plan,
        devices=devices,
        platform=platform,
        verify_tokens=o.verify_tokens,
        sample_metrics=o.sample_metrics,
        stop_when_saturated=o.stop_when_saturated,
        price_per_device_hour=o.price_per_device_hour,
        repeats=o.repeats,
    )
    results = run_scenarios(chosen, target, folder, settings)
    return SpeedStageResult(target, platform, chosen, devices, results)
