"""Real SGLang on this machine's CPU, serving a tiny checkpoint of the plan's model: a rehearsal whose
server is SGLang itself (its argument parser, HTTP layer, parsers, scheduler, metrics), not a double.

The deploy stage writes the tiny checkpoint into the run folder (rehearsal/tiny_model.py), starts
`python -m sglang.launch_server` from the bench tool env (SGLang 0.5.23 as the benchmark client
installs it) with SGLang's CPU engine, the plan's flags that apply on a CPU (rehearsal/cpu_flags.py:
every other flag is recorded with its reason in rehearsal.json and the report) and a few of its
own, and watches and stops it like any local server (process group behind the log pump, teardown
registry, watchdog). Everything measured is labelled REAL SGLANG, TINY MODEL (origin.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from ...origin import REHEARSAL_LABEL
from ...plan import LaunchPlan
from ...tools.envs import OFFLINE_ENV, ToolEnvError, tool_env
from ...tools.scripts import HERE as SCRIPTS_DIR
from ..preflight import Check, PreflightReport, check_port
from ..rehearsal.cpu_flags import OwnFlag, cpu_flags
from ..rehearsal.tiny_model import build_tiny_model
from .base import LaunchContext, local_bind, register
from .process import ProcessGroupLauncher

if TYPE_CHECKING:
    from ..handle import ServerHandle

SITE_DIR = "sglang_cpu_site"
"""tools/scripts/<this>: the stand-in sgl_kernel and the plugin, put on the server's PYTHONPATH."""


class SglangCpuOptions(BaseModel):
    """The rehearsal's own sizes: what a CPU can hold and answer in minutes, not the plan's."""

    model_config = ConfigDict(extra="forbid")

    context_length: int = Field(default=8192, ge=512, le=131072)
    """--context-length of the CPU server (the plan's is for the real model on accelerators)."""
    max_total_tokens: int = Field(default=65536, ge=1024)
    """--max-total-tokens: the KV pool (SGLang would otherwise size it from the machine's RAM)."""


def server_env(site: str) -> dict[str, str]:
    """What SGLang's processes need to run on the CPU with the stand-in kit."""
    return {
        "SGLANG_USE_CPU_ENGINE": "1",  # selects SGLang's CPU platform; --device cpu alone does not
        "TORCHDYNAMO_DISABLE": "1",  # skips a ~30 s inductor compile of the MoE router on the first request
        "PYTHONPATH": site,
        "PYTHONUNBUFFERED": "1",
        **OFFLINE_ENV,
    }


@register
class SglangCpuLauncher(ProcessGroupLauncher):
    name = "sglang-cpu"
    Options = SglangCpuOptions
    default_startup_timeout = 300.0

    def bind(self, plan: LaunchPlan, port: int | None) -> tuple[str, int]:
        return local_bind(plan, port)

    def preflight(self, ctx: LaunchContext) -> PreflightReport:
        checks = [check_port(ctx.host, ctx.port)]
        try:
            env = tool_env("bench")
            checks.append(Check("sglang", "pass", f"SGLang {env.version} in {env.python}"))
        except ToolEnvError as exc:
            fix = "bash scripts/setup_tool_env.sh bench (SGLang 0.5.23, ~6 GB, a few minutes)"
            checks.append(Check("sglang", "fail", f"no SGLang to run on the CPU: {exc}", fix))
        return PreflightReport(checks)

    def start(self, ctx: LaunchContext, handle: ServerHandle) -> None:
        assert isinstance(self.options, SglangCpuOptions)
        opts = self.options
        python = tool_env("bench").python
        tiny = build_tiny_model(ctx.folder, ctx.plan.model, python)
        plan_context = ctx.plan.config.context_length or ctx.plan.model.max_context_length
        context = min(opts.context_length, plan_context)
        ours = [
            OwnFlag("--model-path", str(tiny.directory), "the tiny checkpoint written for this run"),
            OwnFlag("--served-model-name", ctx.plan.served_name, "the plan's served model name"),
            OwnFlag("--host", ctx.host, "the rehearsal binds loopback"),
            OwnFlag("--port", str(ctx.port), "a free port"),
            OwnFlag("--device", "cpu", "SGLang's CPU engine"),
            OwnFlag("--context-length", str(context), f"a CPU-sized context (the plan's: {plan_context})"),
            OwnFlag("--max-total-tokens", str(opts.max_total_tokens), "a CPU-sized KV pool"),
            OwnFlag("--enable-metrics", None, "/metrics for the speed stage's server samples"),
            OwnFlag("--sleep-on-idle", None, "an idle CPU scheduler otherwise polls at ~90% of a core, measured"),
            OwnFlag(
                "--enable-custom-logit-processor",
                None,
                "lets the invoke stage script the tiny model's output through SGLang's own parsers",
            ),
        ]
        flags = cpu_flags(ctx.plan, ctx.environ, ours)
        argv = [str(python), "-m", "sglang.launch_server", *flags.passed]
        rows = flags.dispositions
        env = server_env(str(SCRIPTS_DIR / SITE_DIR))
        handle.command, handle.env = argv, env
        handle.tokenizer = str(tiny.directory)
        handle.rehearsal = REHEARSAL_LABEL
        skipped = [d for d in rows if d.action == "not applicable"]
        if skipped:
            handle.warnings.append(
                f"{len(skipped)} of the plan's flags and env variables are not applicable on the CPU: "
                + "; ".join(f"{d.item} ({d.reason})" for d in skipped[:4])
                + ("; ..." if len(skipped) > 4 else "")
                + " (all in rehearsal.json)"
            )
        ctx.folder.save_json(
            ctx.folder.rehearsal,
            {
                "label": REHEARSAL_LABEL,
                "tiny_model": tiny.summary(),
                "context_length": context,
                "max_total_tokens": opts.max_total_tokens,
                "flags": [d.as_row() for d in rows],
                "env": env,
            },
        )
        self.start_process(handle, argv, {**ctx.environ, **env})

    def ready_url_known(self, handle: ServerHandle) -> bool:
        return True
