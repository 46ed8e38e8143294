"""The shape of a model's cookbook command generator as params/cookbook holds it (cells, defaults)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .values import EnvMap, Strict

CellStrategy = Literal["low-latency", "balanced", "high-throughput", "long-context", "default"]
CellRole = Literal["unified", "prefill", "decode"]


class CookbookCell(Strict):
    """One cell of a cookbook command generator as the page composes it (params/cookbook/generated,
    written by `kimi-runbooks cookbook sync`): the match keys, whether SGLang marks it verified,
    and the env and flags in the page's order ({{MODEL_NAME}}, {{HOST_IP}} and {{PORT}} are the
    page's placeholders, filled by the plan)."""

    hardware: str
    variant: str = "default"
    quantization: str = ""
    strategy: CellStrategy
    role: CellRole = "unified"
    """The page's PD Mode row (a prefill or decode server of a PD deployment)."""
    speculative: str = ""
    """The page's speculative-decoding overlay this recipe carries (none / dspark); '' for a page
    whose cells carry their own speculative flags."""
    nodes: int = Field(ge=1)
    verified: bool
    model_name: str = ""
    image: str = ""
    env: EnvMap = Field(default_factory=dict)
    flags: list[str]
    multi_node_env: dict[str, str] = Field(default_factory=dict)
    """Per-node environment the page asks for outside the cell (e.g. the cross-node NIC); a value
    `<...>` is a placeholder the user must fill."""
    port: int | None = None
    """The port the page serves a PD role on (prefill 30000, decode 30100)."""
    hints: list[str] = Field(default_factory=list)
    warn: str | None = None
    note: str | None = None
    source_commit: str = ""


class Cookbook(Strict):
    """A model's cookbook command generator: its cells, the platforms it lists without a cell, the
    default strategy, and the page it comes from."""

    source: str
    page: str = ""
    revision: str = ""
    """The commit of the page's config this cookbook was generated from."""
    default_strategy: CellStrategy = "balanced"
    default_speculative: str = ""
    """The page's default speculative overlay ('' when it has none)."""
    no_cell: Literal["refuse", "knobs"] = "refuse"
    """A platform without a cell: refused (rule no-verified-cookbook-cell), or planned from the
    project's knobs (the seed pages)."""
    pending: dict[str, str] = Field(default_factory=dict)
    """Platform id -> what the page says of it (listed, no cell yet)."""
    docker_images: dict[str, str] = Field(default_factory=dict)
    """Platform id -> the image the page names for it (the docker form's default for a cell)."""
    cells: list[CookbookCell]
