"""A stand-in for SGLang's `sgl_kernel` package, on the server's PYTHONPATH in a CPU rehearsal.

With SGLANG_USE_CPU_ENGINE=1, SGLang 0.5.23 imports `sgl_kernel` unconditionally
(sglang/srt/mem_cache/allocation.py, sglang/kernels/ops/kvcache/cache_move.py, ...), and the package
index only has CUDA builds of it. Its CPU kernels are used only where AMX is available
(sglang.srt.utils.common.cpu_has_amx_support looks for torch.ops.sgl_kernel.convert_weight_packed);
this module registers no torch op, so SGLang takes its torch-native paths. What it implements:
`assign_req_to_token_pool_cpu`, called on every batch. Any other name imports as a function that
raises NotImplementedError naming itself, so a path that needs a real kernel (speculative decoding,
KV moves between tiers) fails saying which.
"""

from __future__ import annotations

from typing import Any

import torch

STAND_IN = "kimi-runbooks CPU stand-in for sgl_kernel"


def assign_req_to_token_pool_cpu(
    req_pool_indices: torch.Tensor,
    req_to_token: torch.Tensor,
    start_offset: torch.Tensor,
    end_offset: torch.Tensor,
    out_cache_loc: torch.Tensor,
    pool_len: int,
) -> None:
    """req_to_token[req, start:end] = the next (end - start) slots of out_cache_loc, request by request
    (what SGLang's triton kernel assign_req_to_token_pool does on a GPU)."""
    del pool_len
    taken = 0
    for row, start, end in zip(req_pool_indices.tolist(), start_offset.tolist(), end_offset.tolist(), strict=True):
        count = end - start
        req_to_token[row, start:end] = out_cache_loc[taken : taken + count]
        taken += count


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)

    def missing(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"sgl_kernel.{name} is a GPU/AMX kernel that the {STAND_IN} does not provide")

    missing.__name__ = name
    return missing
