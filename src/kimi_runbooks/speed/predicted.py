"""This run's results beside what the performance model predicted for its plan and scenarios.

`predicted_vs_measured(results, run_dir, target)` rebuilds the plan the deploy stage launched
(run_dir/plan.json, else the manifest's), asks kimi_runbooks.perfmodel for each ok scenario at
its measured lengths and load, and returns measured beside predicted with the prediction band
and the metrics measured outside it. An emulated run is put back on time scale 1 first
(timescale.rescale) and labelled: the emulator derives from the same model, so its agreement
is by construction. No plan (an external server, a folder without a deploy stage) or a plan the
model cannot take gives `no prediction: <reason>`, never an error.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..rundir import RunFolder
from .timescale import rescale


def predicted_vs_measured(results: pd.DataFrame, folder: RunFolder, target: Any = None) -> pd.DataFrame:
    from ..perfmodel.beside_measured import plan_of_run, predicted_beside_measured

    manifest = folder.read_json(RunFolder.MANIFEST)
    handle = folder.read_json(RunFolder.HANDLE)
    record = folder.read_json(RunFolder.PLAN) or (manifest or {}).get("plan")
    launchers = {getattr(target, "launcher", None), (manifest or {}).get("launcher"), (handle or {}).get("launcher")}
    emulated = bool(getattr(target, "emulated", False)) or bool((handle or {}).get("emulated"))
    if "label" in results.columns:
        emulated = emulated or bool((results["label"] == "emulated").any())
    launch, reason = plan_of_run(record, external="external" in launchers)
    scale = getattr(target, "time_scale", None) or (handle or {}).get("time_scale")
    on_model_clock = rescale(results, scale) if emulated else results
    return predicted_beside_measured(on_model_clock, launch, emulated=emulated, reason=reason)
