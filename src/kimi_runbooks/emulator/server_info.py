"""What /server_info and /model_info report: SGLang's resolved server args, emulated.

A deploy stage records /server_info in its manifest and reads ``max_total_num_tokens``
from it, so the emulator answers with the full argument set a Kimi-K2.6 launch would
show (defaults below, overridden by the launch args it was given) plus ``emulated: true``.
"""

from __future__ import annotations

from typing import Any

from .settings import EmulatorSettings

SGLANG_VERSION = "0.5.9-emulated"

_DEFAULT_ARGS: dict[str, Any] = {
    "tokenizer_mode": "auto",
    "skip_tokenizer_init": False,
    "load_format": "auto",
    "trust_remote_code": True,
    "dtype": "auto",
    "kv_cache_dtype": "auto",
    "quantization": None,
    "context_length": None,
    "device": "cuda",
    "served_model_name": None,
    "chat_template": None,
    "is_embedding": False,
    "revision": None,
    "host": "127.0.0.1",
    "port": 30000,
    "mem_fraction_static": 0.85,
    "max_running_requests": None,
    "max_total_tokens": None,
    "chunked_prefill_size": 8192,
    "max_prefill_tokens": 16384,
    "schedule_policy": "fcfs",
    "schedule_conservativeness": 1.0,
    "page_size": 1,
    "tp_size": 8,
    "dp_size": 1,
    "ep_size": 1,
    "pp_size": 1,
    "nnodes": 1,
    "node_rank": 0,
    "dist_init_addr": None,
    "stream_interval": 1,
    "stream_output": False,
    "random_seed": 0,
    "log_level": "info",
    "log_requests": False,
    "show_time_cost": False,
    "enable_metrics": True,
    "api_key": None,
    "watchdog_timeout": 300,
    "download_dir": None,
    "base_gpu_id": 0,
    "gpu_id_step": 1,
    "attention_backend": None,
    "sampling_backend": "flashinfer",
    "grammar_backend": "xgrammar",
    "reasoning_parser": "kimi_k2",
    "tool_call_parser": "kimi_k2",
    "enable_dp_attention": False,
    "enable_dp_lm_head": False,
    "moe_a2a_backend": "none",
    "enable_eplb": False,
    "speculative_algorithm": None,
    "speculative_draft_model_path": None,
    "speculative_num_steps": None,
    "speculative_eagle_topk": None,
    "speculative_num_draft_tokens": None,
    "disable_radix_cache": False,
    "disable_cuda_graph": False,
    "cuda_graph_max_bs": 256,
    "enable_torch_compile": False,
    "torch_compile_max_bs": 32,
    "triton_attention_num_kv_splits": 8,
    "enable_mixed_chunk": False,
    "enable_p2p_check": False,
    "enable_cache_report": False,
    "decode_log_interval": 40,
    "allow_auto_truncate": False,
    "enable_multimodal": None,
    "mm_attention_backend": None,
    "preferred_sampling_params": None,
    "weight_version": "default",
}


def server_args(settings: EmulatorSettings) -> dict[str, Any]:
    """Every launch arg as SGLang would show it (the API key is never echoed)."""
    args = dict(_DEFAULT_ARGS)
    args.update(
        {
            "model_path": settings.resolved_model_path,
            "tokenizer_path": settings.resolved_model_path,
            "served_model_name": settings.served_model_name,
            "host": settings.host,
            "port": settings.port,
            "random_seed": settings.seed,
            "context_length": settings.max_model_len,
            "max_running_requests": settings.profile.max_running_requests,
        }
    )
    args.update(settings.launch_args)
    args["context_length"] = settings.max_model_len
    args["api_key"] = "***" if settings.api_key else None
    return args


def server_info(settings: EmulatorSettings, gen_throughput: float) -> dict[str, Any]:
    info = server_args(settings)
    capacity = settings.profile.max_total_num_tokens
    info.update(
        {
            "version": SGLANG_VERSION,
            "max_total_num_tokens": capacity,
            "internal_states": [
                {
                    "last_gen_throughput": round(gen_throughput, 3),
                    "memory_usage": {
                        "weight": 71.4,
                        "kvcache": round(capacity * 70272 / 2**30, 2),
                        "token_capacity": capacity,
                        "graph": 1.9,
                    },
                    "avg_spec_accept_length": None,
                    "effective_max_running_requests_per_dp": settings.profile.max_running_requests,
                }
            ],
            "emulated": True,
            "emulator": {
                "latency_profile": settings.profile.source,
                "time_scale": settings.time_scale,
                "fault": str(settings.fault) if settings.fault else None,
            },
        }
    )
    return info


def model_info(settings: EmulatorSettings) -> dict[str, Any]:
    return {
        "model_path": settings.resolved_model_path,
        "tokenizer_path": settings.resolved_model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "has_image_understanding": True,
        "has_audio_understanding": False,
        "model_type": "kimi_k25",
        "architectures": ["KimiK25ForConditionalGeneration"],
        "emulated": True,
    }
