"""The knobs of one launch (`PlanConfig`): what a user, a runbook or the CLI may set.

Unset knobs (None) take the platform recipe's value; `plan.launch.plan` turns a config into a
validated `LaunchPlan`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

DEFAULT_SGLANG_VERSION = "0.5.9"
"""The SGLang version the cookbook Kimi-K2.6 page tested its recipes with (5.1, 5.2); it selects which rules apply."""


class PlanConfig(BaseModel):
    """The knobs of one launch. Unset knobs (None) take the platform recipe's value."""

    model_config = ConfigDict(extra="forbid")

    platform: str
    model: str | None = None
    deployment: str | None = None
    tp: int | None = Field(default=None, ge=1)
    dp: int | None = Field(default=None, ge=1)
    ep: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    enable_dp_attention: bool | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    mem_fraction_static: float | None = None
    context_length: int | None = Field(default=None, ge=1)
    reasoning_parser: str | None = "default"
    tool_call_parser: str | None = "default"
    speculative: bool = False
    trust_remote_code: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=30000, ge=1, le=65535)
    api_key_env: str | None = None
    served_model_name: str | None = None
    model_path: str | None = None
    draft_model_path: str | None = None
    extra_args: list[str] = Field(default_factory=list)
    enable_metrics: bool = False
    """Add SGLang's --enable-metrics (the speed stage samples /metrics: queueing, KV pool). Off by
    default so a plan reproduces the published command; the runbooks turn it on."""
    env: dict[str, str] = Field(default_factory=dict)
    entrypoint: str = "sglang serve"
    sglang_version: str = DEFAULT_SGLANG_VERSION
    allow: list[str] = Field(default_factory=list)
    nnodes: int | None = Field(default=None, ge=1)
    node_ips: list[str] = Field(default_factory=list)
    dist_init_port: int = 5000
    ifname: str | None = None
    prefill_ip: str | None = None
    decode_ip: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
            raise ValueError(
                f"api_key_env must be the NAME of an environment variable (got '{value}'); never pass the key itself"
            )
        return value or None
