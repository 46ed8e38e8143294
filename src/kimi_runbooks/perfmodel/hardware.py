"""Per-device hardware speeds (params/platforms/<id>.yaml `hardware:`) and which peak applies.

A weight format runs its GEMMs in one precision on a given platform: W4A16 INT4 dequantizes
to bf16, FP8 checkpoints run FP8 where the platform has FP8, NVFP4 runs FP4 where the platform
lists nvfp4, W4A8 runs INT8. Attention always runs bf16.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._deps import Model, Platform

TERA = 1e12
GIGA = 1e9


@dataclass(frozen=True)
class HardwareSpec:
    family: str
    hbm_bytes_per_s: float
    peak_flops: dict[str, float]
    link_bytes_per_s: float
    inter_node_bytes_per_s: float
    scale_up_devices: int = 0
    """Devices of one NVLink domain across nodes (NVL72: 72); 0: the domain ends at the node."""
    # no devices_per_node: device counts come from the plan (tp, dp, the roles), never the node size

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for `dtype`, falling back to bf16 where the platform lacks it."""
        return self.peak_flops.get(dtype) or self.peak_flops["bf16"]


def hardware_spec(platform: Platform) -> HardwareSpec:
    hw = platform.hardware
    return HardwareSpec(
        family=hw.perf_family,
        hbm_bytes_per_s=hw.hbm_bandwidth_gbs * GIGA,
        peak_flops={k: v * TERA for k, v in hw.peak_dense_tflops.items()},
        link_bytes_per_s=hw.interconnect_gbs * GIGA,
        inter_node_bytes_per_s=hw.inter_node_gbs * GIGA,
        scale_up_devices=hw.scale_up_devices or 0,
    )


def expert_dtype(model: Model, platform: Platform) -> str:
    """Precision the routed-expert GEMMs run in."""
    fmt = model.weight_format
    if fmt == "fp8":
        return "fp8" if platform.fp8 else "bf16"
    if fmt in ("nvfp4", "mxfp4"):
        return "fp4" if fmt in platform.fp4_formats else "bf16"
    if fmt == "w4a8":
        return "int8"
    return "bf16"  # int4 W4A16: weights dequantized to bf16 inside the GEMM


def dense_dtype(model: Model, platform: Platform) -> str:
    """Precision of the attention projections and shared/dense FFN GEMMs."""
    return "fp8" if model.weight_format == "fp8" and platform.fp8 else "bf16"
