"""The knobs of one launch (`PlanConfig`): what a user, a runbook or the CLI may set.

Unset knobs (None) take the platform recipe's value; `plan.planner.plan` turns a config into a
validated `LaunchPlan`.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ..catalog.flags import knob_of
from ..catalog.values import is_env_name
from ..target.address import check_address
from .inputs import check_ifname, check_image, check_port
from .memory import KV_CACHE_DTYPES
from .rules import parse_version

DEFAULT_SGLANG_VERSION = "0.5.9"
"""The SGLang version the cookbook Kimi-K2.6 page tested its recipes with (5.1, 5.2); it selects which rules apply."""
EXAMPLE_PLATFORM = "h200"
"""The platform a standalone notebook or the command generator's form shows until one is chosen."""


class PlanConfig(BaseModel):
    """The knobs of one launch. Unset knobs (None) take the platform recipe's value."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    """Each field's docstring is its description: the help of its `kimi-runbooks plan` option."""

    platform: str
    """Platform id (params/platforms)."""
    model: str | None = None
    """Model id (params/models); default: the platform recipe's."""
    deployment: str | None = None
    """Published multi-role deployment id (params/deployments)."""
    tp: int | None = Field(default=None, ge=1)
    """Tensor-parallel size (--tp); default: the recipe's."""
    dp: int | None = Field(default=None, ge=1)
    """Data-parallel size (--dp)."""
    ep: int | None = Field(default=None, ge=1)
    """Expert-parallel size (--ep)."""
    pp: int | None = Field(default=None, ge=1)
    """Pipeline-parallel size (--pp-size)."""
    enable_dp_attention: bool | None = None
    """DP attention (--enable-dp-attention); default: the recipe's."""
    quantization: str | None = None
    """Weight quantization (--quantization); default: the checkpoint's."""
    kv_cache_dtype: str | None = None
    """KV-cache dtype (--kv-cache-dtype)."""
    mem_fraction_static: float | None = None
    """Fraction of device memory for weights and KV cache (--mem-fraction-static)."""
    context_length: int | None = Field(default=None, ge=1)
    """Context length (--context-length); default: the model's."""
    reasoning_parser: str | None = "default"
    """Reasoning parser; 'default' is the model's (kimi_k2 for K2.x)."""
    tool_call_parser: str | None = "default"
    """Tool-call parser; 'default' is the model's."""
    speculative: bool | None = None
    """Speculative decoding: a cookbook page's speculative overlay (kimi-k3: DSPARK, on by default;
    --no-speculative: the page's Non-Spec command), else EAGLE3 with the model's draft (off by default)."""
    strategy: Literal["low-latency", "balanced", "high-throughput", "long-context", "default"] | None = None
    """The cookbook cell's operating point for a model whose cookbook publishes cells (kimi-k3,
    kimi-k2.6); None: the cookbook's default strategy."""
    pd_role: Literal["unified", "prefill", "decode"] | None = None
    """The cookbook page's PD Mode (kimi-k3): a prefill or decode server of a PD deployment; None: unified."""
    cookbook_revision: str | None = None
    """Which kept revision of the cookbook page the recipe comes from: a commit prefix, 'seed' (the
    revision the project reproduced first; for kimi-k2.6 the seed pages' knob-built plan) or
    'newest'; None: the newest kept (params/cookbook/sources.yaml)."""
    trust_remote_code: bool = True
    """Pass --trust-remote-code (Kimi checkpoints ship their own code)."""
    host: str = "127.0.0.1"
    """Address the server binds."""
    port: int = 30000
    """Port the server listens on."""
    api_key_env: str | None = None
    """NAME of the environment variable holding the API key (never the key)."""
    served_model_name: str | None = None
    """Name the server answers to (--served-model-name); default: the model's hub id."""
    model_path: str | None = None
    """Local weights directory instead of the hub id."""
    draft_model_path: str | None = None
    """Local weights of the speculative draft model instead of its hub id."""
    extra_args: list[str] = Field(default_factory=list)
    """One more raw argument for the server."""
    enable_metrics: bool = False
    """Add SGLang's --enable-metrics (the speed stage samples /metrics: queueing, KV pool). Off by
    default so a plan reproduces the published command; the runbooks turn it on."""
    env: dict[str, str] = Field(default_factory=dict)
    """One more environment variable for the server; the value is passed literally."""
    docker_image: str | None = None
    """The image of the docker form (default: the platform's, the cookbook's); say which one runs
    the --sglang-version you plan for."""
    entrypoint: str = "sglang serve"
    """The command that starts the server."""
    sglang_version: str = DEFAULT_SGLANG_VERSION
    """SGLang version you plan for: it selects which versioned rules apply."""
    allow: list[str] = Field(default_factory=list)
    """Turn this rule's error into a recorded warning."""
    nnodes: int | None = Field(default=None, ge=1)
    """Nodes the server spans."""
    devices: int | None = Field(default=None, ge=1)
    """Accelerators per node the user has (default: the platform's devices_per_node, the machine as shipped)."""
    device_ids: list[int] = Field(default_factory=list)
    """Which accelerators of the node the server uses (pinned with CUDA/HIP/ASCEND_RT_VISIBLE_DEVICES);
    default: the first ones when the plan leaves some idle."""
    node_ips: list[str] = Field(default_factory=list)
    """IP of one node, in rank order (the first is the rendezvous)."""
    dist_init_port: int = 5000
    """Port of the multi-node rendezvous (--dist-init-addr IP:PORT)."""
    ifname: str | None = None
    """Network interface of the multi-node collectives (NCCL/GLOO socket ifname)."""
    replicas: int | None = Field(default=None, ge=1)
    """Separate servers behind sglang-router: each the plan's server on its own devices
    (CUDA/HIP_VISIBLE_DEVICES slices) and port (port+1, port+2, ...), the router on `port`; None or 1: one server."""
    router_policy: Literal["cache_aware", "round_robin", "random", "power_of_two"] | None = None
    """sglang-router's --policy for a replicas plan; default cache_aware (a session's shared prefix stays
    on the replica whose radix cache holds it: agentic, multi-turn traffic)."""
    prefill_ip: str | None = None
    """Address of the prefill node of a PD deployment."""
    decode_ip: str | None = None
    """Address of the decode node of a PD deployment."""

    @field_validator("host", "prefill_ip", "decode_ip")
    @classmethod
    def _host(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else check_address(value, str(info.field_name))

    @field_validator("node_ips")
    @classmethod
    def _node_ips(cls, value: list[str]) -> list[str]:
        for i, ip in enumerate(value):
            check_address(ip, f"node_ips[{i}] (--node-ip)", "10.0.0.1")
        return value

    @field_validator("ifname")
    @classmethod
    def _ifname(cls, value: str | None) -> str | None:
        return None if value is None else check_ifname(value)

    @field_validator("docker_image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        return None if value is None else check_image(value)

    @field_validator("port", "dist_init_port")
    @classmethod
    def _port(cls, value: int, info: ValidationInfo) -> int:
        return check_port(value, str(info.field_name))

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value and not is_env_name(value):
            raise ValueError(  # the value is not echoed: it may be the key itself
                "api_key_env must be the NAME of an environment variable (letters, digits, underscores), never "
                "the key itself. Fix: export the key as a variable and pass its name, e.g. SGLANG_API_KEY"
            )
        return value or None

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str]) -> dict[str, str]:
        bad = [name for name in value if not is_env_name(name)]
        if bad:
            raise ValueError(
                f"env names {bad} are not environment variable names. Fix: use names of letters, digits "
                "and underscores that do not start with a digit (e.g. SGLANG_USE_AITER), one entry per variable"
            )
        return value

    @field_validator("device_ids")
    @classmethod
    def _distinct_ids(cls, value: list[int]) -> list[int]:
        if any(i < 0 for i in value) or len(set(value)) != len(value):
            raise ValueError(
                f"device_ids {value} must be distinct accelerator indices >= 0. Fix: e.g. 4,5,6,7 for the second half"
            )
        return value

    @field_validator("mem_fraction_static")
    @classmethod
    def _finite_fraction(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"mem_fraction_static must be a number in (0, 1), not {value}. Fix: pass e.g. 0.8")
        return value

    @field_validator("kv_cache_dtype")
    @classmethod
    def _known_kv_dtype(cls, value: str | None) -> str | None:
        if value is not None and value not in KV_CACHE_DTYPES:
            raise ValueError(
                f"unknown kv_cache_dtype '{value}'. Fix: use one of {', '.join(KV_CACHE_DTYPES)} "
                "(SGLang's --kv-cache-dtype choices), or leave it unset for the recipe's"
            )
        return value

    @field_validator("sglang_version")
    @classmethod
    def _readable_version(cls, value: str) -> str:
        parse_version(value)  # raises ValueError with the fix
        return value

    @field_validator("entrypoint")
    @classmethod
    def _entrypoint_words(cls, value: str) -> str:
        try:
            words = shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"entrypoint {value!r} is not a command line ({exc}). Fix: e.g. 'sglang serve'") from None
        if not words:
            raise ValueError("entrypoint is empty. Fix: e.g. 'sglang serve' or 'python3 -m sglang.launch_server'")
        return value

    @field_validator("extra_args")
    @classmethod
    def _no_key_on_the_command_line(cls, value: list[str]) -> list[str]:
        owners = [knob_of(arg.partition("=")[0]) for arg in value]
        if any(owner is not None and owner[0] == "--api-key" for owner in owners):
            raise ValueError(
                "--api-key in extra_args would put the key on the command line and in the run folder. "
                "Fix: export the key in a variable and pass its NAME as api_key_env (--api-key-env NAME)"
            )
        return value


_TYPE_FIXES = {
    "int_parsing": "pass a whole number",
    "int_type": "pass a whole number",
    "int_from_float": "pass a whole number",
    "float_parsing": "pass a number",
    "float_type": "pass a number",
    "finite_number": "pass a finite number",
    "bool_parsing": "pass True or False",
    "bool_type": "pass True or False",
    "string_type": "pass text",
    "list_type": 'pass a list (papermill: -y "{field}: [a, b]")',
    "dict_type": 'pass a mapping (papermill: -y "{field}: {{key: value}}")',
    "greater_than": "pass a value above {gt}",
    "greater_than_equal": "pass a value of at least {ge}",
    "less_than": "pass a value below {lt}",
    "less_than_equal": "pass a value of at most {le}",
    "literal_error": "pass one of {expected}",
    "missing": "pass a value",
}
"""pydantic's error type -> the fix, for messages pydantic writes itself (they say what is wrong, not what to do)."""


def field_error(error: Mapping[str, Any]) -> str:
    """One pydantic error as "field: what is wrong. Fix: what to do", without pydantic's "Value error, "
    prefix and without the field said twice (our validators' messages name it themselves)."""
    field = ".".join(map(str, error["loc"]))
    message = str(error["msg"]).removeprefix("Value error, ")
    text = message if field and re.match(rf"{re.escape(field)}\b", message) else f"{field}: {message}"
    if "Fix:" not in text:
        fix = _TYPE_FIXES.get(str(error.get("type")), "pass a value of the field's type")
        text += ". Fix: " + fix.format(field=field, **(error.get("ctx") or {})) + f" for {field}"
    return text


def validation_text(exc: ValidationError) -> str:
    """A pydantic error as one readable line per field (field_error), without pydantic's banner and help URL."""
    return "; ".join(field_error(e) for e in exc.errors())
