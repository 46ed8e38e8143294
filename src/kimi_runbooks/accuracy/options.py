"""The accuracy suites the stage knows, and the stage's parameters (`AccuracyOptions`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: suite id -> (tool label, reference suite, one-line description)
SUITES: dict[str, tuple[str, str, str]] = {
    "toolcall-builtin": (
        "kimi-runbooks built-in tool-call eval",
        "k2vv-toolcall",
        "K2-Vendor-Verifier's formats and definitions, plus trigger F1",
    ),
    "k2vv-toolcall": ("K2-Vendor-Verifier tool_calls_eval.py", "k2vv-toolcall", "needs a checkout (k2vv_path)"),
    "aime25": ("sgl-eval", "aime25", "AIME 2025, data in the sgl-eval wheel"),
    "sgl-eval:gsm8k": ("sgl-eval", "gsm8k", "downloads GSM8K unless a dataset path is given"),
    "sgl-eval:gpqa": ("sgl-eval", "gpqa-diamond", "downloads GPQA unless a dataset path is given"),
    "sgl-eval:mmmu_pro": ("sgl-eval", "mmmu-pro", "downloads MMMU-Pro (images) at run time"),
    "gpqa-diamond": ("inspect-ai + inspect_evals", "gpqa-diamond", "downloads the CSV unless a dataset path is given"),
    "ocrbench": ("Kimi-Vendor-Verifier eval.py", "ocrbench", "needs a checkout (kvv_path)"),
    "mmmu-pro": ("Kimi-Vendor-Verifier eval.py", "mmmu-pro", "needs a checkout (kvv_path)"),
}
SMOKE_SUITES = ["toolcall-builtin", "aime25"]
SGL_EVAL_SUITES = {
    "aime25": "aime25",
    "sgl-eval:gsm8k": "gsm8k",
    "sgl-eval:gpqa": "gpqa",
    "sgl-eval:mmmu_pro": "mmmu_pro",
}
SMOKE_LIMIT = 2
SMOKE_TOOLCALL_MAX_TOKENS = 2048  # smoke runs of the tool-call suites (published: 64000)


class AccuracyOptions(BaseModel):
    """The accuracy stage's choices (the run folder is the RunFolder passed beside them). Each field's
    docstring is the comment beside it in the notebook's parameters cell."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    base_url: str | None = None
    """Server root, e.g. "http://127.0.0.1:30000"; None: run_dir/handle.json (deploy stage)."""
    model: str | None = None
    """None: the served model (/v1/models)."""
    api_key_env: str | None = None
    """NAME of the env var holding the key (never the key)."""
    suites: list[str] = Field(default_factory=lambda: list(SMOKE_SUITES))
    """The smoke set by default; see SUITES below for the rest."""
    limits: dict[str, int] = Field(default_factory=dict)
    """Suite to problems/requests, e.g. {"aime25": 30}."""
    published: bool = False
    """True: the published settings in full (hours on real hardware); False: smoke settings."""
    k2vv_path: str | None = None
    """K2-Vendor-Verifier checkout (tool calls; official samples in tool-calls/)."""
    kvv_path: str | None = None
    """Kimi-Vendor-Verifier checkout (ocrbench, mmmu-pro)."""
    datasets: dict[str, str] = Field(default_factory=dict)
    """Suite to staged dataset path for offline sites, e.g. {"gpqa-diamond": "/data/gpqa_diamond.csv"}."""
    toolcall_samples: str | None = None
    """None: the official file from k2vv_path, else the project's small CI set."""
    toolcall_reference: str | None = None
    """Reference results JSONL for the trigger F1 (e.g. the official API's results)."""
    concurrency: int | None = None
    """None: the published concurrency (with published) or a small one."""
    emulated: bool | None = None
    """Whether the server is the emulator; None: ask /server_info."""
    rerun: bool = False
    """Run suites again that this run folder already holds as finished with the same settings."""
    timeout_s: float | None = None
    """Seconds per tool run; None: the tool's own."""
    clone: bool = True
    """Clone a verifier checkout missing at its path when GitHub is reachable (False: never clone)."""

    @field_validator("suites")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in SUITES]
        if unknown:
            raise ValueError(f"unknown suite(s) {unknown}; choose from {sorted(SUITES)}")
        return value
