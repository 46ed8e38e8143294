"""Energy and cost per token: joules per output token and tok/s per kW from device telemetry, and
dollars per million output tokens from a price per device-hour.

The price is the user's (a parameter) or the platform's published list price in params/platforms
(`price_per_device_hour`, with its source); every figure says which it used. InferenceX computes
its J/token from a provisioned all-in kW per GPU; these come from measured board power, a
different (smaller) quantity, and are labelled so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def energy(telemetry: Mapping[str, Any], output_tokens: Any, output_throughput: Any) -> dict[str, Any]:
    """J per output token and output tok/s per kW of measured board power (empty without power)."""
    joules, power = telemetry.get("energy_j"), telemetry.get("mean_power_w")
    out: dict[str, Any] = {}
    if isinstance(joules, (int, float)) and isinstance(output_tokens, (int, float)) and output_tokens > 0:
        out["joules_per_output_token"] = joules / output_tokens
    if isinstance(power, (int, float)) and power > 0 and isinstance(output_throughput, (int, float)):
        out["output_tok_s_per_kw"] = output_throughput / (power / 1000.0)
    if out:
        out["energy_source"] = f"measured board power ({telemetry.get('tool')})"
    return out


def cost(
    output_throughput: Any, devices: Any, price_per_device_hour: float | None, price_source: str | None
) -> dict[str, Any]:
    """$ per million output tokens at `devices` x price per device-hour (empty without a price)."""
    if not price_per_device_hour or not isinstance(output_throughput, (int, float)) or output_throughput <= 0:
        return {}
    try:
        n = float(devices)
    except (TypeError, ValueError):
        return {}
    if n <= 0:
        return {}
    millions_per_hour = output_throughput * 3600 / 1e6
    return {
        "usd_per_million_output_tokens": price_per_device_hour * n / millions_per_hour,
        "price_per_device_hour": price_per_device_hour,
        "price_source": price_source or "from price parameter",
    }
