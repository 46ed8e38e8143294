"""Slurm: an sbatch script that starts the server (or one script per node) through `srun`.

The job's output goes through the same redacting log pump as a local launch, so the run folder
never holds a key; the job id is the handle teardown uses (`scancel`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..plan import NodeCommand
from ..plan.shell import assignment, script_text, shell_join
from ..rundir import RunFolder
from .logpump import pump_command

ACTIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"}


class SlurmError(RuntimeError):
    """Slurm is missing or refused the job; the message says what to do."""


def require(tools: tuple[str, ...] = ("sbatch", "srun", "squeue", "scancel")) -> dict[str, str]:
    found = {t: shutil.which(t) for t in tools}
    missing = [t for t, path in found.items() if not path]
    if missing:
        raise SlurmError(
            f"launcher='slurm' needs {', '.join(missing)} on PATH, which is missing here. "
            "Fix: run from a Slurm login node (module load slurm), or use launcher='multi-node' "
            "to get the per-node scripts and start them yourself."
        )
    return found  # type: ignore[return-value]


def _quote(argv: list[str]) -> str:
    return shell_join(argv)


@dataclass(frozen=True)
class SlurmJob:
    """What every sbatch script of a run says about its job: the #SBATCH header and the key name
    the log pump redacts."""

    job_name: str
    secret_env: str | None = None
    partition: str | None = None
    time_limit: str | None = None
    extra_sbatch: tuple[str, ...] = ()
    """More `#SBATCH` lines, e.g. ("--account=proj",)."""


def sbatch_script(job: SlurmJob, run_dir: Path, command: list[str], env: Mapping[str, str] | None = None) -> str:
    """One task on one node: export the plan's env, `srun` the (pumped) server command; its logs
    in `run_dir` (the run folder's absolute path: the job may start elsewhere)."""
    header = _header(job, run_dir, 1)
    lines = ["set -uo pipefail", *(f"export {assignment(k, v)}" for k, v in (env or {}).items())]
    pumped = pump_command(command, run_dir / RunFolder.SERVER_LOG, job.secret_env)
    lines.append("srun --nodes=1 --ntasks=1 --kill-on-bad-exit=1 " + _quote(pumped))
    return script_text(lines, header)


def multinode_sbatch_script(
    job: SlurmJob, run_dir: Path, nodes: list[NodeCommand], scripts: list[Path], router_script: Path | None
) -> str:
    """One srun per node script (node i of the allocation runs plan.nodes[i]); the router on node 0.

    Node addresses come from the allocation: NODE<r>_IP per role rank, PREFILL_IP / DECODE_IP from
    the first node of those roles, so the scripts' `${...:?}` references resolve.
    """
    header = _header(job, run_dir, len(nodes))
    secret_env = job.secret_env
    lines = [
        "set -uo pipefail",
        'mapfile -t HOSTS < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        "ip_of() { getent ahostsv4 \"$1\" | awk 'NR==1{print $1}'; }",
    ]
    first_of: dict[str, int] = {}
    addresses: list[tuple[str, int]] = []
    for i, node in enumerate(nodes):
        first_of.setdefault(node.role, i)
        if node.role in ("mixed", "server"):
            addresses.append((f"NODE{node.node_rank}_IP", i))
    addresses += [(f"{role.upper()}_IP", first_of[role]) for role in ("prefill", "decode") if role in first_of]
    for name, index in addresses:  # assigned, then exported: `export X="$(...)"` would hide a failure
        lines += [f'{name}="$(ip_of "${{HOSTS[{index}]}}")"', f"export {name}"]
    for i, (node, script) in enumerate(zip(nodes, scripts)):
        log = run_dir / RunFolder.node_log_name(node.role, node.node_rank)
        pumped = pump_command(["bash", str(script)], log, secret_env)
        lines.append(f"srun --nodes=1 --ntasks=1 --relative={i} --kill-on-bad-exit=1 {_quote(pumped)} &")
    if router_script is not None:
        pumped = pump_command(["bash", str(router_script)], run_dir / RunFolder.ROUTER_LOG, secret_env)
        lines.append(f"srun --overlap --nodes=1 --ntasks=1 --relative=0 {_quote(pumped)} &")
    lines.append("wait")
    return script_text(lines, header)


def _header(job: SlurmJob, run_dir: Path, nnodes: int) -> list[str]:
    for value in (
        job.job_name,
        str(run_dir),
        os.getcwd(),
        job.partition or "",
        job.time_limit or "",
        *job.extra_sbatch,
    ):
        if "\n" in value or "\r" in value:
            raise SlurmError(f"{value!r} holds a line break, which would end its #SBATCH line. Fix: remove it.")
    lines = [
        f"#SBATCH --job-name={job.job_name}",
        f"#SBATCH --nodes={nnodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={run_dir / 'slurm-%j.out'}",
        f"#SBATCH --chdir={os.getcwd()}",
        "#SBATCH --export=ALL",
    ]
    if job.partition:
        lines.append(f"#SBATCH --partition={job.partition}")
    if job.time_limit:
        lines.append(f"#SBATCH --time={job.time_limit}")
    lines += [f"#SBATCH {opt}" for opt in job.extra_sbatch]
    return lines


def submit(script: Path, environ: dict[str, str]) -> str:
    tools = require()
    proc = subprocess.run(
        [tools["sbatch"], "--parsable", str(script)], capture_output=True, text=True, env=environ, timeout=60
    )
    if proc.returncode:
        raise SlurmError(
            f"sbatch refused the job: {proc.stderr.strip()[:500]}. Fix: check the partition "
            "and limits with `sinfo`, or pass slurm_options."
        )
    return proc.stdout.strip().split(";")[0]


def job_state(job_id: str) -> str | None:
    """The job's state, or None once Slurm has forgotten it (finished or cancelled)."""
    squeue = shutil.which("squeue")
    if not squeue:
        return None
    proc = subprocess.run([squeue, "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30)
    state = proc.stdout.strip()
    return state or None


def is_active(job_id: str) -> bool:
    return (job_state(job_id) or "") in ACTIVE_STATES


def cancel(job_id: str, wait: float = 30.0) -> bool:
    """scancel and wait until the job has left the queue; True when it is gone."""
    scancel = shutil.which("scancel")
    if not scancel:
        return False
    subprocess.run([scancel, job_id], capture_output=True, timeout=30)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not is_active(job_id):
            return True
        time.sleep(0.5)
    return not is_active(job_id)


def describe(script: Path) -> str:
    return f"sbatch {shlex.quote(str(script))}"
