"""The accuracy suites the stage knows, and the stage's parameters (`AccuracyConfig`)."""

from __future__ import annotations

from pathlib import Path

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


class AccuracyConfig(BaseModel):
    """Parameters of the accuracy stage (the notebook's parameters cell maps onto these)."""

    model_config = ConfigDict(extra="forbid")

    run_dir: Path
    base_url: str | None = None  # server root (no /v1); None -> run_dir/handle.json
    model: str | None = None
    api_key_env: str | None = None
    suites: list[str] = Field(default_factory=lambda: list(SMOKE_SUITES))
    limits: dict[str, int] = Field(default_factory=dict)
    published: bool = False  # True: the published settings in full; False: smoke settings
    k2vv_path: str | None = None
    kvv_path: str | None = None
    datasets: dict[str, str] = Field(default_factory=dict)  # suite -> staged dataset path
    toolcall_samples: str | None = None  # None: official file in the K2VV checkout, else the CI set
    toolcall_reference: str | None = None  # reference results JSONL for the trigger F1
    concurrency: int | None = None
    emulated: bool | None = None  # None: ask /server_info
    rerun: bool = False
    timeout_s: float | None = None
    clone: bool = True

    @field_validator("suites")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in SUITES]
        if unknown:
            raise ValueError(f"unknown suite(s) {unknown}; choose from {sorted(SUITES)}")
        return value
