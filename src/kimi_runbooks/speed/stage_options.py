"""The speed stage's parameters (`SpeedStageOptions`): which server, which scenarios, how they are run.

One typed declaration for `run(folder, options)` and the speed notebook's parameters cell (written
from these fields, scripts/notebook_cells); a misspelt setting fails with the valid names. The
runner's own settings (SpeedOptions) are derived from these in run()."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .argv import DEFAULT_TIMEOUT_S


class SpeedStageOptions(BaseModel):
    """The speed stage's parameters. Each field's docstring is the comment beside it in the
    notebook's parameters cell."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)

    base_url: str | None = None
    """None: the server in run_dir/handle.json (deploy stage)."""
    model: str | None = None
    """Served model name; None: the handle's, or (with base_url) what /v1/models lists."""
    api_key_env: str | None = None
    """NAME of the env var holding the API key (never the key)."""
    platform: str | None = None
    """Platform id for references and per-GPU numbers; None: from the handle."""
    scenario_set: str = "smoke"
    """A set in params/scenarios."""
    scenarios: list[str] | None = None
    """Or a list of scenario ids (overrides scenario_set)."""
    offline: bool = True
    """No downloads: random becomes random-ids, local tokenizer."""
    tokenizer: str | None = None
    """The served model's tokenizer (local dir); None: the handle's, the deployed model_path, or (emulator
    only) a small local one."""
    command_prefix: list[str] | None = None
    """e.g. ["docker", "exec", "sglang"]; None: the bench tool env's python."""
    bench_python: str | None = None
    """Interpreter with sglang; None: .venvs/bench (or python3 after a prefix)."""
    dataset_path: str | None = None
    """Local ShareGPT json for sharegpt scenarios when offline."""
    tolerance: float = Field(default=0.1, ge=0)
    """Regression beyond 10% (direction-aware)."""
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    """Per scenario."""
    resume: bool = True
    """Skip scenarios bench.jsonl already holds as finished."""
    devices: int | None = None
    """GPUs behind the server (per-GPU figures); None: the deployed plan's, else the recipe's; never guessed for an
    external server."""
    fail_on_error: bool = True
    """Raise at the end when a scenario failed: the stage is then not ok."""
    verify_tokens: bool = True
    """One request per scenario first: the server's token counts must match the benchmark's."""
    sample_metrics: bool = True
    """Sample the server's /metrics beside each scenario (needs --enable-metrics)."""
    stop_when_saturated: bool = False
    """End a concurrency sweep once the server queues and throughput stops growing."""
    price_per_device_hour: float | None = None
    """$ per device-hour for the cost column; None: the platform's published price."""
    repeats: int | None = None
    """Runs per scenario (a scenario's own repeats wins): mean and 95% interval; None: once."""
