"""Command line: ``python -m kimi_runbooks.emulator --host 127.0.0.1 --port 30000 ...``.

Besides its own flags it accepts every SGLang 0.5.23 launch flag (``--tp 8``,
``--kv-cache-dtype fp8_e4m3``, ...), refuses what that release's parser refuses (launch_flags.py)
and reports the flags in /server_info, so a deploy stage can hand the emulator the same argv it
would give ``sglang serve``.  The API key is
never taken on the command line: ``--api-key-env VAR`` names the variable holding it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .capabilities import ModelCapabilities, model_entry
from .latency import DEFAULT_PROFILE, LatencyProfile, profile_from_references
from .launch_flags import LaunchFlagError, read_launch_flags
from .settings import FAULT_KINDS, EmulatorSettings, parse_fault
from .speculative import resolve_speculative
from .startup import BANNER, log_line
from .state_cap import capped_profile

log = logging.getLogger("kimi_runbooks.emulator")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m kimi_runbooks.emulator",
        description="SGLang emulator: speaks SGLang's HTTP API as Kimi-K2.6 would (EMULATED).",
        allow_abbrev=False,
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument(
        "--profile", default="default", help="platform id whose predicted speed sets the latency model, or 'default'"
    )
    p.add_argument(
        "--profile-from",
        choices=("model", "references"),
        default="model",
        help="model: the performance model's prediction for the platform's plan "
        "(every platform); references: a straight-line fit of its published rows",
    )
    p.add_argument("--params-dir", type=Path, default=None, help="params/ folder (references)")
    p.add_argument("--model", "--served-model-name", dest="model", default="moonshotai/Kimi-K2.6")
    p.add_argument("--model-path", default=None)
    p.add_argument(
        "--time-scale", type=float, default=1.0, help="multiply every simulated duration (0.01 = 100x faster)"
    )
    p.add_argument("--fault", default=None, help=f"one of: {', '.join(FAULT_KINDS)} (kind[=value])")
    p.add_argument("--api-key-env", default=None, help="name of the environment variable holding the API key")
    p.add_argument("--startup-seconds", type=float, default=0.0)
    p.add_argument("--ttft-ms", type=float, default=None, help="override: TTFT base (ms)")
    p.add_argument("--ttft-per-1k-ms", type=float, default=None, help="override: extra TTFT per 1K input tokens (ms)")
    p.add_argument("--itl-ms", type=float, default=None, help="override: ITL base (ms)")
    p.add_argument(
        "--itl-per-running-ms", type=float, default=None, help="override: extra ITL per running request (ms)"
    )
    p.add_argument("--max-total-num-tokens", type=int, default=None)
    p.add_argument("--max-running-requests", type=int, default=None)
    p.add_argument("--context-length", type=int, default=None)
    p.add_argument("--seed", "--random-seed", dest="seed", type=int, default=0)
    p.add_argument("--log-level", default="warning")
    p.add_argument(
        "--strict-sglang",
        action="store_true",
        help="answer exactly as SGLang does: no X-Emulated header, no emulated markers",
    )
    return p


def parse_launch(
    argv: Sequence[str] | None = None,
) -> tuple[argparse.ArgumentParser, argparse.Namespace, dict[str, Any], dict[str, Any]]:
    """The command line as SGLang 0.5.23 reads it: the emulator's own options, the SGLang flags by
    destination and what SGLang's speculative resolution sets; exits with argparse's usage error
    where SGLang's parser or resolution refuses the launch."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    launch_args = sglang_extra_args(extra, parser)
    try:  # DSPARK's verify window; 48 running without --max-running-requests
        speculative = resolve_speculative({**launch_args, "max_running_requests": args.max_running_requests})
    except ValueError as exc:
        parser.error(str(exc))
    return parser, args, launch_args, speculative


def parse_settings(argv: Sequence[str] | None = None) -> tuple[EmulatorSettings, argparse.Namespace]:
    parser, args, launch_args, speculative = parse_launch(argv)
    try:
        fault = parse_fault(args.fault)
    except ValueError as exc:
        parser.error(str(exc))
    if not 0 < args.time_scale <= 1000:  # also refuses nan and inf (a run that would never end)
        parser.error("--time-scale must be a number above 0 and at most 1000 (0.01 runs 100x faster)")
    profile = _profile(args, launch_args)
    requested = args.max_running_requests
    if "max_running_requests" in speculative:  # SGLang sets it before the scheduler sizes anything
        requested = speculative.pop("max_running_requests")
        profile = replace(profile, max_running_requests=min(profile.max_running_requests, requested))
    launch_args.update(speculative)
    entry = model_entry(args.model_path, args.model, args.params_dir)
    if entry is not None:  # parsers not given: the model's own, as SGLang infers them from its architecture
        launch_args.setdefault("tool_call_parser", entry.tool_call_parser)
        if entry.default_reasoning_parser:
            launch_args.setdefault("reasoning_parser", entry.default_reasoning_parser)
    if args.context_length:
        launch_args["context_length"] = args.context_length
    try:  # a hybrid model runs at most what its state pool admits (state_cap.py)
        profile, args.state_cap_line = capped_profile(profile, entry, launch_args, requested)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        settings = EmulatorSettings(
            host=args.host,
            port=args.port,
            model=args.model,
            model_path=args.model_path,
            profile=profile,
            time_scale=args.time_scale,
            fault=fault,
            api_key=_api_key(args.api_key_env, parser),
            startup_seconds=args.startup_seconds,
            seed=args.seed,
            # --context-length when given (SGLang's model_config.context_len), else the checkpoint's own
            # (max_position_embeddings)
            max_model_len=args.context_length
            or (entry.max_context_length if entry is not None else EmulatorSettings.max_model_len),
            launch_args=launch_args,
            strict_sglang=args.strict_sglang,
            enable_metrics=bool(launch_args.get("enable_metrics", False)),
            capabilities=ModelCapabilities.from_model(entry) if entry is not None else ModelCapabilities(),
        )
    except ValueError as exc:  # e.g. a --tool-call-parser the emulator does not speak
        parser.error(str(exc))
    return settings, args


def sglang_extra_args(extra: Sequence[str], parser: argparse.ArgumentParser) -> dict[str, Any]:
    """``--tp 8 --enable-dp-attention`` -> {"tp_size": 8, "enable_dp_attention": True}, refused
    where SGLang 0.5.23's parser refuses it (launch_flags.py)."""
    try:
        return read_launch_flags(extra)
    except LaunchFlagError as exc:
        parser.error(str(exc))


def _api_key(env_name: str | None, parser: argparse.ArgumentParser) -> str | None:
    if not env_name:
        return None
    value = os.environ.get(env_name)
    if not value:
        parser.error(f"--api-key-env {env_name}: that environment variable is empty or unset")
    return value


def default_params_dir() -> Path:
    env = os.environ.get("KIMI_RUNBOOKS_PARAMS")
    if env:
        return Path(env)
    cwd = Path.cwd() / "params"
    return cwd if cwd.is_dir() else Path(__file__).resolve().parents[3] / "params"


PLAN_KNOBS = {
    "tp_size": "tp",
    "dp_size": "dp",
    "ep_size": "ep",
    "enable_dp_attention": "enable_dp_attention",
    "kv_cache_dtype": "kv_cache_dtype",
    "mem_fraction_static": "mem_fraction_static",
    "context_length": "context_length",
}
"""SGLang flags the emulator was given -> the plan knobs the prediction is made for."""


def predicted_profile(
    platform_id: str, params_dir: Path, launch_args: dict[str, Any], model_path: str | None
) -> LatencyProfile | None:
    """The performance model's profile for the plan these flags describe on this platform;
    None (with a log line) when params/ cannot say (no such platform, unreadable params)."""
    from pydantic import ValidationError

    from ..catalog import ParamsError, load_catalog
    from ..perfmodel import Predictor
    from ..perfmodel.store import load_calibration
    from ..plan import plan
    from .profile import latency_profile

    try:
        catalog = load_catalog(params_dir)
        catalog.platform(platform_id)
    except (ParamsError, OSError) as exc:
        log.warning(
            "no predicted profile for %r (%s); falling back to published references",
            platform_id,
            str(exc).splitlines()[0],
        )
        return None
    config: dict[str, Any] = {"platform": platform_id}
    model = next((m.id for m in catalog.models.values() if model_path in (m.hf_id, m.served_name)), None)
    if model:
        config["model"] = model
    knobs = {PLAN_KNOBS[k]: v for k, v in launch_args.items() if k in PLAN_KNOBS and v is not None}
    if model:  # the launch's speculative overlay (K3: DSPARK, K2.6: EAGLE3) or none: the plan's decode timing
        knobs["speculative"] = bool(launch_args.get("speculative_algorithm"))
    calibration = load_calibration(catalog.root)
    for attempt in ({**config, **knobs}, {"platform": platform_id}):
        try:
            launch = plan(attempt, catalog)
            return latency_profile(launch, Predictor(launch, calibration))
        except (ValidationError, ParamsError, ValueError) as exc:
            log.warning("predicted profile for %s failed (%s)", attempt, str(exc).splitlines()[0])
    return None


def _profile(args: argparse.Namespace, launch_args: dict[str, Any] | None = None) -> LatencyProfile:
    launch_args = launch_args or {}
    profile = DEFAULT_PROFILE
    if args.profile and args.profile.lower() != "default":
        params_dir = args.params_dir or default_params_dir()
        predicted = None
        if args.profile_from == "model":
            predicted = predicted_profile(args.profile, params_dir, launch_args, args.model_path)
        # the fit logs a warning itself when the platform has no speed references
        profile = predicted or profile_from_references(args.profile, params_dir)
    overrides = {
        "ttft_base_ms": args.ttft_ms,
        "ttft_per_1k_input_ms": args.ttft_per_1k_ms,
        "itl_base_ms": args.itl_ms,
        "itl_per_running_ms": args.itl_per_running_ms,
        "max_total_num_tokens": args.max_total_num_tokens,
        "max_running_requests": args.max_running_requests,
    }
    overrides = {k: v for k, v in overrides.items() if v is not None}
    for key, value in overrides.items():
        if value < 0 or (key.startswith("max_") and value < 1):
            raise SystemExit(f"latency override {key}={value} must be positive")
    if overrides:
        profile = replace(profile, **overrides, source=f"{profile.source} + command-line overrides")
    return profile


OOM_TAIL = """Traceback (most recent call last):
  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2911, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)
  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 812, in load_model
    self.model = get_model(model_config=self.model_config, load_config=self.load_config)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.21 GiB is free. Process has 138.59 GiB memory in use. (emulated fault crash-on-start)
[TP0] Scheduler hit an exception: torch.OutOfMemoryError: CUDA out of memory.
Received sigquit from a child process. It usually means the child failed."""


def crash_on_start(settings: EmulatorSettings) -> int:
    """Emulate a launch that dies while loading weights: log, OOM traceback, exit 1."""
    log_line(BANNER)
    log_line("Load weight begin. avail mem=139.02 GB")
    time.sleep(min(max(0.5 * settings.time_scale, 0.05), 2.0))
    print(OOM_TAIL, file=sys.stderr, flush=True)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    settings, args = parse_settings(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="[%(asctime)s] %(levelname)s %(message)s",
    )
    if settings.fault_is("crash-on-start"):
        return crash_on_start(settings)
    import uvicorn

    from .app import create_app
    from .limits import bind_warning, bounded_protocol, connection_budget, install_throttle

    log.warning("latency profile: %s", settings.profile)
    if args.state_cap_line:
        log_line(args.state_cap_line)  # SGLang's warning, as its scheduler logs it at start-up
    warning = bind_warning(settings)
    if warning:
        log.warning(warning)
    budget = connection_budget()
    config = uvicorn.Config(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=str(args.log_level).lower(),
        access_log=False,
        http=bounded_protocol(budget),  # idle connections cannot exhaust the file limit
    )
    install_throttle()  # after uvicorn.Config set up its loggers' handlers
    uvicorn.Server(config).run()
    return 0
