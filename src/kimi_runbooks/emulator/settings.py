"""Settings of one emulator instance, and the parser for its ``--fault`` modes.

Kept apart from the app so tests, the CLI and other stages build the same object.
The API key is held here only to be compared; it is excluded from repr and never logged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .capabilities import ModelCapabilities
from .formats import ChatFormat, chat_format
from .latency import DEFAULT_PROFILE, LatencyProfile

TOOL_FAULT_KINDS = (  # tool-calling failures users report; what each does: tool_faults.py
    "empty-after-think",
    "markers-in-content",
    "ids-restart",
    "uuid-call-ids",
    "stream-args-cut",
    "call-in-reasoning",
    "hyphen-names-dropped",
    "parallel-index-reused",
    "tool-choice-ignored",
    "truncated-call-kept",
)
PAGED_MLA_BACKENDS = {"flashmla", "trtllm_mla", "cutedsl_mla", "hpc_ops"}
"""Backends SGLang 0.5.23 moves to page size 64 (arg_groups/overrides.py _mla_backend_page_constraints)."""
"""Backends SGLang 0.5.23 moves to page size 64 (arg_groups/overrides.py _mla_backend_page_constraints)."""
FAULT_KINDS = (
    "slow-start",  # /health answers 503 for startup_seconds (value = seconds)
    "crash-on-start",  # the CLI prints a CUDA OOM traceback tail and exits 1
    "crash-mid-stream",  # os._exit part-way through the Nth stream (value = N, default 1)
    "bad-tool-json",  # tool-call arguments are malformed JSON
    "no-reasoning",  # no reasoning_content; thinking leaks into content in <think> tags
    "http-500-rate",  # fraction (value) of generation requests answer 500
    "response-format-ignored",  # response_format accepted but not honoured: free text, as before issue 27
    "prompt-tokens-off",  # usage.prompt_tokens scaled by value (default 0.8): another tokenizer's count
    "effort-ignored",  # reasoning_effort accepted but not honoured: every level reasons at the model's default
    *TOOL_FAULT_KINDS,
)


@dataclass(frozen=True)
class FaultSpec:
    """One fault mode and its optional numeric value (``kind=value`` on the command line)."""

    kind: str
    value: float | None = None

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}={self.value:g}"


def parse_fault(text: str | None) -> FaultSpec | None:
    """Parse ``--fault`` text such as ``slow-start=30`` or ``http-500-rate=0.2``."""
    if text is None or not str(text).strip() or str(text).strip().lower() == "none":
        return None
    kind, _, raw = str(text).strip().partition("=")
    kind = kind.strip().lower().replace("_", "-")
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault {kind!r}; choose one of {', '.join(FAULT_KINDS)}")
    value = None
    if raw.strip():
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"fault value must be a number, got {raw!r}") from None
    if kind == "http-500-rate" and not (value is not None and 0.0 <= value <= 1.0):
        raise ValueError("http-500-rate needs a fraction between 0 and 1, e.g. http-500-rate=0.1")
    if value is not None and value < 0:
        raise ValueError("fault values must not be negative")
    return FaultSpec(kind, value)


@dataclass
class EmulatorSettings:
    """Everything that shapes one emulator instance.

    ``launch_args`` are extra SGLang-style server args (snake_case keys) reported verbatim
    in /server_info, e.g. ``{"tp_size": 8, "kv_cache_dtype": "fp8_e4m3"}``.
    """

    host: str = "127.0.0.1"
    port: int = 30000
    model: str = "moonshotai/Kimi-K2.6"
    model_path: str | None = None  # defaults to ``model``
    profile: LatencyProfile = DEFAULT_PROFILE
    time_scale: float = 1.0
    fault: FaultSpec | None = None
    api_key: str | None = field(default=None, repr=False)
    startup_seconds: float = 0.0
    max_model_len: int = 262144
    seed: int = 0
    launch_args: dict[str, Any] = field(default_factory=dict)
    log_startup: bool = True
    strict_sglang: bool = False  # drop even the allowed deviations (deviations.py)
    capabilities: ModelCapabilities = field(default_factory=ModelCapabilities)
    """What the model does (thinking, effort levels, video): its params/models entry (capabilities.py)."""
    enable_metrics: bool = True
    """Serve /metrics. The CLI sets it from --enable-metrics as SGLang does (off without the flag);
    in-process emulators (tests) keep it on."""

    def __post_init__(self) -> None:
        if isinstance(self.fault, str):
            self.fault = parse_fault(self.fault)
        if not 0 < self.time_scale <= 1000:  # also refuses nan and inf
            raise ValueError("time_scale must be above 0 and at most 1000")
        if self.fault and self.fault.kind == "slow-start" and self.fault.value is not None:
            self.startup_seconds = max(self.startup_seconds, self.fault.value)
        if self.launch_args.get("context_length"):
            self.max_model_len = int(self.launch_args["context_length"])
        chat_format(self.tool_call_parser)  # an unknown parser is refused here, with the choices

    @property
    def tool_call_parser(self) -> str:
        return str(self.launch_args.get("tool_call_parser") or "kimi_k2")

    @property
    def reasoning_parser(self) -> str:
        return str(self.launch_args.get("reasoning_parser") or "kimi_k2")

    @property
    def page_size(self) -> int:
        """The prefix cache's page (--page-size; else SGLang's default for the attention backend:
        64 for the MLA backends that only take pages, arg_groups/overrides.py, else 1)."""
        given = self.launch_args.get("page_size")
        if given:
            return int(given)
        backends = {self.launch_args.get(k) for k in ("attention_backend", "decode_attention_backend")}
        return 64 if backends & PAGED_MLA_BACKENDS else 1

    @property
    def disable_radix_cache(self) -> bool:
        return bool(self.launch_args.get("disable_radix_cache"))

    @property
    def enable_cache_report(self) -> bool:
        """--enable-cache-report: usage.prompt_tokens_details.cached_tokens on the OpenAI routes."""
        return bool(self.launch_args.get("enable_cache_report"))

    @property
    def chat_format(self) -> ChatFormat:
        """The raw output format and serving differences of the --tool-call-parser (formats.py)."""
        return chat_format(self.tool_call_parser)

    @property
    def served_model_name(self) -> str:
        return self.model

    @property
    def resolved_model_path(self) -> str:
        return self.model_path or self.model

    @property
    def marked(self) -> bool:
        """Whether the emulated markers (deviations.DEVIATIONS) are on."""
        return not self.strict_sglang

    def fault_is(self, kind: str) -> bool:
        return self.fault is not None and self.fault.kind == kind
