"""Judge planned SGLang server command lines with SGLang's own code (bench env, no GPU, no weights).

Usage: python check_server_argv.py [FILE]   (FILE, or stdin: a JSON list; one JSON result line per item on stdout)

An item is a planned argv (``["sglang", "serve", "--model-path", ...]``), or an object
``{"id": ..., "argv": [...], "env": {...}, "values": {...}, "arch": "hopper"}``:

- argv: the whole command. Everything up to the server entrypoint is dropped (``sglang serve``,
  ``python -m sglang.launch_server``, with any ``docker run ... IMAGE`` or ``env A=B`` before it);
  an argv that starts with a flag is taken as flags. Anything else (the router) is an error result.
- env: the launch environment, set while this argv is judged (SGLang reads SGLANG_* variables).
- values: what to put for the plan's ``${NAME}`` / ``${NAME:?why}`` references in argv and env.
  Unset ones take DEFAULT_VALUES (private addresses 10.0.0.x, eth0, /models/...); a reference
  with neither is an error result, never parsed as written.
- arch: the platform's arch id (params/platforms ``arch``). SGLang's platform facts (is_cuda,
  is_sm90, is_sm100, is_hip, is_npu, device capability, ...) are answered from ARCH_FACTS through
  SGLang's own ``runtime_context.override_platform``, so a check that reads them judges the
  target GPU, not this CPU machine. Without arch the facts are probed (this machine: no GPU).
  Code that calls a probe directly (``utils.common.is_cuda()``, ``torch.cuda``) still sees this
  machine; none of the steps that run here does.

What runs, per argv, in the order a launch runs it:

1. ``sglang serve`` only: its argv normalisation (``cli/serve.py`` ``_extract_model_type_override``,
   ``_normalize_positional_model_path``); the backend auto-detection that follows reads the model
   (``get_is_diffusion_model``) and is not run.
2. ``prepare_server_args`` (srt/server_args.py): ``ServerArgs.add_cli_args`` + argparse +
   ``ServerArgs.from_cli_args``, after ``load_plugins()`` as both entrypoints do. Unknown or ambiguous
   options, bad values, values outside choices and retired flags whose ``DeprecatedAction`` stops the
   launch are refused here (argparse's SystemExit; its stderr is the message).
3. ``ServerArgs.resolve_once`` (``ServerArgs.__post_init__`` is empty in 0.5.23: resolution and
   validation moved to ``arg_groups/pipeline.py`` ``run_resolution_pipeline``), run unchanged until the
   first step that needs the checkpoint. Every step that finished is listed in the result
   (``steps_run``); today: handle_deprecated_dp_attention, handle_mega_moe (check_mega_moe_compat:
   reads the platform facts), handle_return_hidden_states_mode, handle_media_url_security,
   handle_watermark_config, handle_hicache_ratio_default, handle_offload_compatibility,
   validate_prefill_decode_interval, validate_response_store, validate_sampling_mask_max_tokens,
   handle_aux_hidden_state_capture, validate_prefill_cp_platform, handle_hardware_runtime_validation
   (the model-independent checks SGLang runs before its dummy-model return) and
   handle_model_source_paths (resolve_hf_gguf_model_path: a hub id that is not a .gguf needs no file).

What cannot run here (named in each result as ``stopped_at`` / ``not_run``):

- the rest of ``run_resolution_pipeline``, from ``apply_muse_spark_env_defaults`` on: it reads the
  checkpoint's config.json (``get_config``, ``model_config_of``); the model paths are hub ids or
  directories this machine does not have, and HF_HUB_OFFLINE is set. Past it, several steps also
  query the device itself rather than the platform facts (``handle_gpu_memory_settings`` and
  ``handle_kv_cache_sharding`` call ``get_device_memory_capacity``; ``handle_attention_backend_compatibility``
  and model overrides call ``torch.cuda.get_device_capability``), so they could not run on a CPU
  machine even with the config.
- ``ServerArgs.check_server_args`` (arg_groups/validation_hook.py, run by the Engine after
  resolution: tp divisible by nnodes, no multi-node --dp replicas, chunked prefill vs page size,
  check_lora_server_args, check_two_batch_overlap, validate_device_sampling_backend, ...): it reads
  resolved values (served_model_name, page_size, chunked_prefill_size) that only the full
  resolution sets.
- anything after resolution (model load, CUDA graphs, memory pools).

A result: ``{"id", "entrypoint", "flags", "status": "accepted" | "rejected" | "error", "stage":
"input" | "parse" | "resolve", "message", "step", "steps_run", "stopped_at", "not_run", "warnings",
"platform"}``. "rejected" is SGLang refusing the argv (argparse exit, or a ValueError /
AssertionError / NotImplementedError from a resolution step); "error" is anything that kept the
check from judging (bad input, an unexpected exception), never a verdict on the argv.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import re
import sys
import traceback
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_VALUES = {
    "PREFILL_IP": "10.0.0.101",
    "DECODE_IP": "10.0.0.102",
    "IFNAME": "eth0",
    "MODEL_PATH": "/models/model",
    "DRAFT_MODEL_PATH": "/models/draft",
}
"""Stand-ins for the plan's references; NODE<k>_IP is 10.0.0.<k+1> (NODE_IP below)."""
NODE_IP = re.compile(r"NODE(\d+)_IP")
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::[?-][^}]*)?\}")

_NVIDIA = {"is_cuda": True, "has_flashinfer": True}
ARCH_FACTS: dict[str, dict[str, Any]] = {
    "hopper": {**_NVIDIA, "is_sm90": True, "is_hopper_with_cuda_12_3": True, "device_sm": 90},
    "blackwell": {**_NVIDIA, "is_sm100": True, "is_sm100_or_sm110": True, "is_blackwell": True, "device_sm": 100},
    "blackwell-ultra": {**_NVIDIA, "is_sm100": True, "is_sm100_or_sm110": True, "is_blackwell": True, "device_sm": 103},
    "blackwell-sm120": {**_NVIDIA, "is_sm120": True, "is_blackwell": True, "device_sm": 120},
    "cdna3": {"is_hip": True, "device_sm": 94},
    "cdna4": {"is_hip": True, "device_sm": 95},
    "ascend-a3": {"is_npu": True, "device_sm": 0},
}
"""SGLang's platform facts (runtime_context._PLATFORM_PROBES / _PLATFORM_VALUES) per project arch:
compute capability 9.0 (H200), 10.0 (B200/GB200), 10.3 (B300/GB300), 12.0 (RTX PRO 6000), gfx942 as
ROCm reports it (9.4, MI300X/MI325X), gfx950 (9.5, MI350X/MI355X), Ascend (no CUDA capability).
Facts not named are False."""


def platform_facts(arch: str) -> dict[str, Any]:
    from sglang.srt.runtime_context import _PLATFORM_PROBES

    facts: dict[str, Any] = {**dict.fromkeys(_PLATFORM_PROBES, False), **ARCH_FACTS[arch]}
    sm = facts["device_sm"]
    facts["device_capability"] = (sm // 10, sm % 10) if sm else (None, None)
    return facts


class InputError(ValueError):
    """The item cannot be judged as given (no entrypoint, a reference without a value)."""


def server_flags(argv: list[str]) -> tuple[str, list[str]]:
    """(entrypoint, the flags SGLang's server parser receives)."""
    if argv and argv[0].startswith("-"):
        return "", list(argv)
    for i, word in enumerate(argv):
        rest = argv[i + 1 :]
        if os.path.basename(word) == "sglang" and rest[:1] == ["serve"]:
            from sglang.cli.serve import _extract_model_type_override, _normalize_positional_model_path

            _, flags = _extract_model_type_override(rest[1:])
            flags, _ = _normalize_positional_model_path(flags)
            return "sglang serve", list(flags)
        if word == "-m" and rest[:1] == ["sglang.launch_server"]:
            return "python -m sglang.launch_server", rest[1:]
    raise InputError(f"no SGLang server entrypoint (sglang serve, python -m sglang.launch_server) in {argv[:6]} ...")


def fill(text: str, values: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        if name in DEFAULT_VALUES:
            return DEFAULT_VALUES[name]
        node = NODE_IP.fullmatch(name)
        if node:
            return f"10.0.0.{int(node.group(1)) + 1}"
        raise InputError(f"no value for ${{{name}}}: pass it in the item's values")

    return REFERENCE.sub(one, text)


@contextlib.contextmanager
def launch_env(env: dict[str, str]):
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Warnings(logging.Handler):
    """SGLang's own warnings while it judges one argv (deprecated flags, overrides)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())
        if text not in self.lines:
            self.lines.append(text)


class StepLog:
    """Which resolution steps finished: pipeline.run_hook and run_post_process_pass, wrapped."""

    def __init__(self) -> None:
        import sglang.srt.arg_groups.pipeline as pipeline

        self.done: list[str] = []
        self.pipeline = pipeline
        hook, post = pipeline.run_hook, pipeline.run_post_process_pass

        def run_hook(builtin: Any, server_args: Any) -> None:
            hook(builtin, server_args)
            self.done.append(builtin.__name__)

        def run_post_process_pass(server_args: Any, fn: Any) -> None:
            post(server_args, fn)
            self.done.append(fn.__qualname__)

        pipeline.run_hook = run_hook
        pipeline.run_post_process_pass = run_post_process_pass


def failed_step(exc: BaseException, pipeline_code: Any) -> str:
    """The step of run_resolution_pipeline the exception came out of (its name, as pipeline.py calls it)."""
    frames = list(traceback.walk_tb(exc.__traceback__))
    for i, (frame, _) in enumerate(frames):
        if frame.f_code is pipeline_code and i + 1 < len(frames):
            callee = frames[i + 1][0]
            if callee.f_code.co_name == "run_hook":
                return callee.f_locals["builtin"].__name__
            if callee.f_code.co_name == "run_post_process_pass":
                return callee.f_locals["fn"].__qualname__
            return callee.f_code.co_name
    return "?"


MODEL_READERS = ("/transformers/", "/huggingface_hub/", "/sglang/srt/utils/hf_transformers/")


def reads_checkpoint(exc: BaseException) -> bool:
    """Whether the step stopped because the checkpoint is not here: transformers' OSError for a config.json
    it cannot find (hub id offline, or no such directory), raised through transformers / the hub client."""
    if not isinstance(exc, OSError):
        return False
    seen: BaseException | None = exc
    while seen is not None:
        if any(
            part in frame.f_code.co_filename
            for frame, _ in traceback.walk_tb(seen.__traceback__)
            for part in MODEL_READERS
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def parse_message(stderr: str, code: Any) -> str:
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if ": error: " in line]
    return (errors[-1] if errors else (lines[-1] if lines else f"argparse exit {code}")).strip()


def judge(item: Any, steps: StepLog) -> dict[str, Any]:
    if isinstance(item, list):
        item = {"argv": item}
    result: dict[str, Any] = {"id": item.get("id"), "entrypoint": None, "flags": None, "platform": "probed"}
    try:
        values = {str(k): str(v) for k, v in (item.get("values") or {}).items()}
        entrypoint, flags = server_flags([str(word) for word in item["argv"]])
        flags = [fill(word, values) for word in flags]
        env = {str(k): fill(str(v), values) for k, v in (item.get("env") or {}).items()}
        arch = item.get("arch")
        if arch is not None and arch not in ARCH_FACTS:
            raise InputError(f"unknown arch {arch!r}; known: {', '.join(ARCH_FACTS)}")
    except (InputError, KeyError, TypeError) as exc:
        return {**result, "status": "error", "stage": "input", "message": str(exc), "warnings": []}
    result.update(entrypoint=entrypoint, flags=flags, platform=arch or "probed")
    warnings = Warnings()
    logger = logging.getLogger("sglang")  # not the root logger: prepare_server_args resets its handlers
    logger.addHandler(warnings)
    try:
        with launch_env(env), override_platform(arch), contextlib.redirect_stdout(sys.stderr):
            result.update(check(flags, steps))
    finally:
        logger.removeHandler(warnings)
    result["warnings"] = warnings.lines
    return result


def override_platform(arch: str | None) -> Any:
    from sglang.srt.runtime_context import override_platform

    return override_platform(**(platform_facts(arch) if arch else {}))


def check(flags: list[str], steps: StepLog) -> dict[str, Any]:
    """Parse as the entrypoints do, then resolve until the first step that needs the checkpoint."""
    from sglang.srt.server_args import prepare_server_args

    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            server_args = prepare_server_args(flags)
    except SystemExit as exc:
        return {"status": "rejected", "stage": "parse", "message": parse_message(stderr.getvalue(), exc.code)}
    finally:
        sys.stderr.write(stderr.getvalue())
    steps.done = []
    try:
        server_args.resolve_once()
    except (Exception, SystemExit) as exc:  # classified below: a verdict, a missing checkpoint, or an error
        step = failed_step(exc, steps.pipeline.run_resolution_pipeline.__code__)
        if not reads_checkpoint(exc):
            verdict = "rejected" if isinstance(exc, (ValueError, AssertionError, NotImplementedError)) else "error"
            message = f"{type(exc).__name__}: {exc}"
            return {"status": verdict, "stage": "resolve", "step": step, "message": message, "steps_run": steps.done}
        not_run = f"{step} and every later resolution step, then check_server_args (they need the checkpoint's config)"
        return {
            "status": "accepted",
            "stage": "resolve",
            "steps_run": steps.done,
            "stopped_at": step,
            "not_run": not_run,
        }
    not_run = "check_server_args (the Engine runs it after resolution)"
    return {"status": "accepted", "stage": "resolve", "steps_run": steps.done, "stopped_at": None, "not_run": not_run}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="JSON list of items (default: stdin)")
    args = parser.parse_args(argv)
    items = json.load(open(args.file) if args.file else sys.stdin)
    if not isinstance(items, list):
        print("expected a JSON list of argv lists or items", file=sys.stderr)
        return 2
    with contextlib.redirect_stdout(sys.stderr):  # SGLang's imports and plugins print; stdout carries results
        from sglang.srt.plugins import load_plugins

        load_plugins()
        steps = StepLog()
    out = sys.stdout
    for item in items:
        result = judge(item, steps)
        out.write(json.dumps(result) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
