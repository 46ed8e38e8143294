"""What /server_info and /model_info report: SGLang's resolved server args, emulated.

/server_info has SGLang 0.5.23's keys (sglang/srt/utils/common.py ``build_server_info`` and
entrypoints/http_server.py ``server_info``): every ServerArgs field, then ``launch_command``,
the scheduler's init info (``status``, ``max_total_num_tokens``, ``max_req_input_len``,
``startup_time``, ``hicache_object_layout``), ``kv_events``, ``internal_states`` (per DP rank:
the args again plus world_size, startup_time, effective_max_running_requests_per_dp,
last_gen_throughput and ``memory_usage`` with ``graph`` per capture phase,
managers/scheduler_components/internal_state.py), ``version`` and ``frontend``. Field names
and defaults come from data/sglang_server_args.json, generated from the installed SGLang by
tests/contract/regen_server_args.py; a Kimi-K2.6 launch's values and the emulator's own
launch args go on top. A deploy stage records this and reads ``max_total_num_tokens``.
"""

from __future__ import annotations

import json
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Any

from .settings import EmulatorSettings

DATA_FILE = Path(__file__).with_name("data") / "sglang_server_args.json"
GRAPH_PHASES = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")
KV_BYTES_PER_TOKEN = 70272  # Kimi-K2 MLA: 61 layers x 576 dims x 2 bytes

# A Kimi-K2.6 launch on 8 GPUs, as the runbooks start it (values only for known fields).
_KIMI_LAUNCH: dict[str, Any] = {
    "trust_remote_code": True,
    "mem_fraction_static": 0.85,
    "chunked_prefill_size": 8192,
    "max_prefill_tokens": 16384,
    "tp_size": 8,
    "random_seed": 0,
    "enable_metrics": True,
    "reasoning_parser": "kimi_k2",
    "tool_call_parser": "kimi_k2",
    "device": "cuda",
    "attention_backend": "flashinfer",
    "sampling_backend": "flashinfer",
    "cuda_graph_max_bs": 256,
}


@lru_cache(maxsize=1)
def sglang_fields() -> dict[str, Any]:
    fields: dict[str, Any] = json.loads(DATA_FILE.read_text())["fields"]
    return fields


@lru_cache(maxsize=1)
def sglang_version() -> str:
    return str(json.loads(DATA_FILE.read_text())["sglang_version"])


def server_args(settings: EmulatorSettings) -> dict[str, Any]:
    """Every ServerArgs field as SGLang would show it (the API key is never echoed)."""
    fields = sglang_fields()
    args = dict(fields)
    args.update({k: v for k, v in _KIMI_LAUNCH.items() if k in fields})
    args.update(
        {
            "model_path": settings.resolved_model_path,
            "tokenizer_path": settings.resolved_model_path,
            "served_model_name": settings.served_model_name,
            "host": settings.host,
            "port": settings.port,
            "random_seed": settings.seed,
            "max_running_requests": settings.profile.max_running_requests,
        }
    )
    args.update({k: v for k, v in settings.launch_args.items() if k in fields})
    args["context_length"] = settings.max_model_len
    args["enable_metrics"] = settings.enable_metrics
    # masked: an allowed deviation (deviations.py); strict mode echoes it as SGLang does
    args["api_key"] = ("***" if settings.marked else settings.api_key) if settings.api_key else None
    return args


def launch_command(settings: EmulatorSettings) -> str:
    argv = ["--model-path", settings.resolved_model_path]
    for key, value in settings.launch_args.items():
        flag = "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return shlex.join(argv)


def max_req_input_len(context_length: int, max_total_num_tokens: int) -> int:
    """The longest input SGLang 0.5.23 admits: min(context length, KV pool) - 1 - 5 (tp_worker.py
    ``max_req_len``, ``max_req_input_len``). The pool bounds it too: a request must fit it whole."""
    return min(context_length - 1, max_total_num_tokens - 1) - 5


def memory_usage(settings: EmulatorSettings) -> dict[str, Any]:
    capacity = settings.profile.max_total_num_tokens
    graph = dict.fromkeys(GRAPH_PHASES, 0.0)
    graph["decode"] = 1.9
    return {
        "weight": 71.41,
        "kvcache": round(capacity * KV_BYTES_PER_TOKEN / 2**30, 3),
        "startup_available": 139.02,
        "token_capacity": capacity,
        "token_capacity_swa": None,
        "graph": graph,
    }


DECODE_GRAPH_PHASES = ("decode", "draft_decode")
"""internal_state.py _DECODE_GRAPH_PHASES: the graphs decode_cuda_graph_memory_gb adds up."""


def startup_breakdown(seconds: float, tokenizer: bool = True) -> dict[str, Any]:
    """``startup_time`` as SGLang 0.5.23 reports it: seconds per start-up step (the scheduler's, and
    the tokenizer manager's end to end at the top level), not a timestamp."""
    out: dict[str, Any] = {
        "load_weight": round(seconds * 0.6, 6),
        "kv_cache_allocation": round(seconds * 0.05, 6),
        "scheduler_e2e": round(seconds * 0.9, 6),
        "cuda_graph": dict.fromkeys(GRAPH_PHASES, 0.0),
    }
    if tokenizer:
        out["tokenizer_e2e"] = round(seconds, 6)
    return out


def server_info(settings: EmulatorSettings, gen_throughput: float, startup_seconds: float) -> dict[str, Any]:
    """``startup_seconds``: how long the (simulated) start took."""
    args = server_args(settings)
    capacity = settings.profile.max_total_num_tokens
    internal = {k: v for k, v in args.items() if k != "custom_sigquit_handler"}
    memory = memory_usage(settings)
    bs = int(args.get("cuda_graph_max_bs") or 0)
    if settings.profile.spec_accept_length:  # internal_state.py: only a speculative server reports it
        internal["avg_spec_accept_length"] = settings.profile.spec_accept_length
    internal.update(
        {
            "world_size": int(args.get("tp_size") or 1) * int(args.get("pp_size") or 1),
            "startup_time": startup_breakdown(startup_seconds, tokenizer=False),
            "effective_max_running_requests_per_dp": settings.profile.max_running_requests,
            "last_gen_throughput": round(gen_throughput, 3),
            "memory_usage": memory,
            # the scheduler's disaggregation block (internal_state.py _add_disaggregation), on every server
            "decode_cuda_graph_bs": [b for b in (1, 2, 4, 8, 16, 32, 64, 128, 256) if b <= bs],
            "decode_cuda_graph_memory_gb": round(sum(memory["graph"][p] for p in DECODE_GRAPH_PHASES), 3),
        }
    )
    info = dict(args)
    info.update(
        {
            "launch_command": launch_command(settings),
            "status": "ready",
            "max_total_num_tokens": capacity,
            "max_req_input_len": max_req_input_len(settings.max_model_len, capacity),
            "startup_time": startup_breakdown(startup_seconds),
            "hicache_object_layout": None,
            "kv_events": None,
            "internal_states": [internal],
            "version": sglang_version(),
            "frontend": "python",
        }
    )
    if settings.marked:  # the allowed deviation (deviations.py)
        info["emulated"] = True
        info["version"] = f"{info['version']}-emulated"
    return info


def model_info(settings: EmulatorSettings) -> dict[str, Any]:
    """http_server.py ``model_info``."""
    args = server_args(settings)
    return {
        "model_path": settings.resolved_model_path,
        "served_model_name": settings.served_model_name,
        "tokenizer_path": settings.resolved_model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "load_format": args.get("load_format", "auto"),
        "reasoning_parser": args.get("reasoning_parser"),
        "tool_call_parser": args.get("tool_call_parser"),
        "disaggregation_mode": args.get("disaggregation_mode", "null"),
        "has_image_understanding": settings.capabilities.images,
        "has_audio_understanding": False,
        # hf_config.model_type / architectures: the served checkpoint's (its params/models entry)
        "model_type": settings.capabilities.model_type,
        "architectures": list(settings.capabilities.architectures),
    }
