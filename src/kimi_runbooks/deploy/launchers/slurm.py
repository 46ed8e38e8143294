"""Slurm: sbatch + srun (one node, or one srun per node script), stopped with scancel.

`emulate=True` submits the emulator instead of SGLang (a CI rehearsal of the Slurm path).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict, Field, field_validator

from ...plan import LaunchPlan
from ...procs import STOP_GRACE_SECONDS
from ...rundir import RunFolder
from .. import sbatch as slurm
from ..preflight import PreflightReport, check_accelerators, check_model_path, check_shm
from .base import LaunchContext, Launcher, register
from .emulator import EmulatorLauncher, EmulatorOptions, emulator_argv
from .local import local_command
from .multinode import prepare_scripts

if TYPE_CHECKING:
    from ..handle import ServerHandle


class SlurmOptions(EmulatorOptions):
    """sbatch options; the emulator's options apply when emulate=True."""

    model_config = ConfigDict(extra="forbid")

    sbatch_options: list[str] = Field(default_factory=list)
    """Extra `#SBATCH` lines, e.g. ["--partition=gpu", "--time=02:00:00"]."""
    emulate: bool = False

    @field_validator("sbatch_options")
    @classmethod
    def _one_line_each(cls, value: list[str]) -> list[str]:
        bad = [opt for opt in value if "\n" in opt or "\r" in opt or not opt.startswith("-")]
        if bad:
            raise ValueError(f"sbatch_options {bad!r}: each is one sbatch option on one line, e.g. '--time=02:00:00'")
        return value


@register
class SlurmLauncher(Launcher):
    name = "slurm"
    Options = SlurmOptions

    @property
    def opts(self) -> SlurmOptions:
        assert isinstance(self.options, SlurmOptions)
        return self.options

    @property
    def emulated(self) -> bool:  # type: ignore[override]
        return self.opts.emulate

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        if self.opts.emulate:
            return EmulatorLauncher().bind(plan, port)
        return plan.serve_host, port or plan.serve_port

    def url(self, plan: LaunchPlan, host: str, port: int) -> str:
        if plan.nodes and not self.opts.emulate:
            return plan.base_url  # the router's (or node 0's) address, maybe only known on the allocation
        return super().url(plan, host, port)

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        if self.opts.emulate:
            return PreflightReport()
        # checks run on the submitting host; the port is on the allocated node, so it is not checked
        return PreflightReport([*check_accelerators(ctx.plan, ctx.environ), check_model_path(ctx.plan), check_shm()])

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        slurm.require()
        if ctx.plan.nodes and not self.opts.emulate:
            self._start_multinode(ctx, handle)
            return
        secret_env = handle.api_key_env
        env: dict[str, str] = {}
        if self.opts.emulate:
            command = emulator_argv(ctx.plan, host=ctx.host, port=ctx.port, options=self.opts)
            handle.command = command
            handle.time_scale = self.opts.time_scale
        else:
            local_command(ctx.plan, ctx.environ)  # refuses now when a referenced variable is unset
            # the plan's argv keeps the key as the reference "${NAME}": the job reads it from the
            # environment it inherits (--export=ALL), so the script never holds the key
            command, env = ctx.plan.argv, dict(ctx.plan.launch_env)
            handle.command, handle.env = command, env
        script = ctx.folder.save_text(
            ctx.folder.sbatch,
            slurm.sbatch_script(self._job(handle, secret_env), ctx.folder.path.resolve(), command, env),
        )
        handle.scripts = [script]
        handle.slurm_job_id = slurm.submit(script, ctx.environ)
        print(f"submitted slurm job {handle.slurm_job_id} ({slurm.describe(script)})")
        handle.log_path = ctx.folder.server_log.resolve()

    def _job(self, handle: ServerHandle, secret_env: str | None) -> slurm.SlurmJob:
        return slurm.SlurmJob(
            job_name=f"kimi-runbooks-{handle.run_id}",
            secret_env=secret_env,
            extra_sbatch=tuple(self.opts.sbatch_options),
        )

    def _start_multinode(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        scripts, router, _ = prepare_scripts(ctx, handle)
        script = ctx.folder.save_text(
            ctx.folder.sbatch,
            slurm.multinode_sbatch_script(
                self._job(handle, ctx.plan.config.api_key_env),
                ctx.folder.path.resolve(),
                ctx.plan.nodes,
                [p.resolve() for p in scripts],
                router.resolve() if router else None,
            ),
        )
        handle.scripts.append(script)
        handle.slurm_job_id = slurm.submit(script, ctx.environ)
        print(f"submitted slurm job {handle.slurm_job_id}; logs: {ctx.folder.path}/server-<role>-<rank>.log")

    def exit_code(self, handle: ServerHandle) -> int | None:
        if handle.slurm_job_id:
            return None if slurm.is_active(handle.slurm_job_id) else -1
        return None

    def stop(self, handle: ServerHandle) -> None:
        if handle.slurm_job_id:
            slurm.cancel(handle.slurm_job_id)

    @classmethod
    def stop_recorded(cls, folder: RunFolder, record: dict[str, Any], grace: float = STOP_GRACE_SECONDS) -> list[str]:
        job = record.get("slurm_job_id")
        if job and slurm.is_active(str(job)):
            slurm.cancel(str(job))
            return [f"scancel {job}"]
        return []
