"""Deploy stage: a validated plan -> a running server (or an attached one), recorded and torn down.

`run(folder, DeployOptions(...))` is the stage: it launches the run's one plan (`plan_for_run(folder,
knobs)`: the one saved in the run folder; planned once and saved when there is none) with
`launch(plan, launcher, folder, LaunchOptions(...))` -> `ServerHandle`; launchers are registered by name
in launchers/ (emulator, local, docker, slurm, multi-node, external). preflight checks the machine
before anything starts, readiness waits and shows start-up phases, diagnose explains a failed
start from the catalogue in params/diagnosis (signatures), manifest records what ran,
teardown_run stops what a run folder recorded.
"""

from .diagnose import Diagnosis, Finding, diagnose, findings, run_diagnosis
from .errors import DeployError, DeployTimeout, PlanError, PreflightError
from .handle import ServerHandle
from .launchers import (
    LAUNCHERS,
    EmulatorOptions,
    Launcher,
    SlurmOptions,
    docker_command,
    emulator_argv,
    free_port,
    get_launcher,
    local_command,
    multinode_steps,
    write_node_scripts,
)
from .live import stop_all
from .preflight import PreflightReport
from .readiness import current_phase, wait_ready
from .signatures import Signature, load_signatures
from .stage import run
from .stage_inputs import DeployOptions, plan_for_run
from .start import (
    LaunchOptions,
    finish,
    launch,
    notebook_options,
    record,
    require_valid,
    run_preflight,
)
from .teardown import teardown_run

__all__ = [
    "Diagnosis",
    "DeployError",
    "DeployOptions",
    "DeployTimeout",
    "EmulatorOptions",
    "Finding",
    "LAUNCHERS",
    "LaunchOptions",
    "Launcher",
    "PlanError",
    "PreflightError",
    "PreflightReport",
    "ServerHandle",
    "Signature",
    "SlurmOptions",
    "current_phase",
    "diagnose",
    "docker_command",
    "emulator_argv",
    "findings",
    "finish",
    "free_port",
    "get_launcher",
    "launch",
    "load_signatures",
    "local_command",
    "multinode_steps",
    "notebook_options",
    "plan_for_run",
    "record",
    "require_valid",
    "run_diagnosis",
    "run",
    "run_preflight",
    "stop_all",
    "teardown_run",
    "wait_ready",
    "write_node_scripts",
]
