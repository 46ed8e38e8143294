"""Collective communication time over the device interconnect (bandwidth term only).

Latency per collective is not modelled separately: it sits in the per-layer overhead that
the calibration fits per platform family (factors.overhead_us).
"""

from __future__ import annotations

from .hardware import HardwareSpec


def group_link(hw: HardwareSpec, spans_nodes: bool, devices: int = 0) -> float:
    """Bytes/s one device moves in a collective; a group across nodes is held to the NIC unless all
    its `devices` sit in one scale-up domain that crosses nodes (an NVL72 rack: NVLink between trays)."""
    if not spans_nodes or (devices and devices <= hw.scale_up_devices):
        return hw.link_bytes_per_s
    return min(hw.link_bytes_per_s, hw.inter_node_bytes_per_s)


def allreduce_s(message_bytes: float, devices: int, link_bytes_per_s: float) -> float:
    """Ring all-reduce: each device sends and receives 2 (n-1)/n of the message."""
    if devices <= 1 or message_bytes <= 0:
        return 0.0
    return 2.0 * (devices - 1) / devices * message_bytes / link_bytes_per_s


def alltoall_s(bytes_per_device: float, devices: int, link_bytes_per_s: float) -> float:
    """All-to-all: each device sends (n-1)/n of its buffer to the others."""
    if devices <= 1 or bytes_per_device <= 0:
        return 0.0
    return (devices - 1) / devices * bytes_per_device / link_bytes_per_s


def allgather_s(message_bytes: float, devices: int, link_bytes_per_s: float) -> float:
    """Ring all-gather of a `message_bytes` whole: each device receives (n-1)/n of it."""
    if devices <= 1 or message_bytes <= 0:
        return 0.0
    return (devices - 1) / devices * message_bytes / link_bytes_per_s


def kv_transfer_s(kv_bytes: float, hw: HardwareSpec) -> float:
    """PD disaggregation: one request's KV from the prefill pool to the decode pool, over one NIC.
    An MLA latent is not split by heads: every decode attention rank receives the whole of it,
    the ranks in parallel over their own NICs ("Only MLA replicates its KV across decode ranks",
    sgl-project/sglang python/sglang/srt/disaggregation/common/conn.py, resolve_kv_replica_factor),
    so the time is one NIC's; the pools sit on different nodes, so it crosses the scale-out
    network (params/platforms `inter_node_gbs`)."""
    return kv_bytes / hw.inter_node_bytes_per_s if kv_bytes > 0 else 0.0
