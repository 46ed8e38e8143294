"""Plans from a model's published cookbook cells (params/models `cookbook:`, e.g. Kimi-K3).

A cell is the SGLang cookbook command generator's output for one (hardware, variant,
quantization, strategy, nodes): its env and flags in the page's order. The plan reproduces it
flag for flag: the page's placeholders ({{MODEL_NAME}}, {{HOST_IP}}, {{PORT}}) are filled from the
plan's knobs, a knob the user sets replaces the cell's value in place, and `--extra-arg` folds in
as SGLang reads it. Which cell applies, and whether SGLang marks it verified, become rule facts:
a platform the cookbook has no cell for is refused (params/rules/launch.yaml
no-verified-cookbook-cell) unless the user allows it, and then gets a generic plan.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from ..catalog import ArgValue, Cookbook, CookbookCell, Model, Platform
from ..catalog.flags import canonical_flag, parse_extra_args
from ..cookbook.kept import pick_revision
from .config import PlanConfig
from .knobs import METRICS_FLAG
from .rules import RuleResult
from .server_options import read_extra_options
from .shell import env_ref

_KNOB_OF_FLAG = {
    "--tp": "tp",
    "--dp": "dp",
    "--enable-dp-attention": "enable_dp_attention",
    "--ep": "ep",
    "--pp": "pp",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--mem-fraction-static": "mem_fraction_static",
    "--context-length": "context_length",
    "--quantization": "quantization",
}
"""Cell flags that are plan knobs: the cell's value is the recipe's, a user's knob replaces it."""


@dataclass(frozen=True)
class CellChoice:
    """The cell a plan uses (None when the cookbook has none for the platform and strategy)."""

    cell: CookbookCell | None
    strategy: str
    status: str
    """'verified', 'unverified' or 'no-cell' ('' for a model without a cookbook)."""
    explanation: str
    verified_cells: list[str] = field(default_factory=list)
    source: str = ""

    def facts(self) -> dict[str, Any]:
        return {
            "has_cookbook": bool(self.status),
            "cookbook_status": self.status,
            "cookbook_cell": cell_label(self.cell) if self.cell else "",
            "cookbook_explanation": self.explanation,
            "cookbook_verified_cells": ", ".join(self.verified_cells) or "(none)",
            "cookbook_source": self.source,
            "strategy": self.strategy,
        }


NO_COOKBOOK = CellChoice(None, "", "", "")


def cell_label(cell: CookbookCell) -> str:
    nodes = f"{cell.nodes} node" + ("s" if cell.nodes > 1 else "")
    if cell.speculative:  # a page with a PD Mode row and overlays (kimi-k3 since f795573d)
        return f"{cell.hardware} / {cell.role} / {cell.strategy} / {nodes} / spec {cell.speculative}"
    if cell.variant == "default" and not cell.quantization:
        return f"{cell.hardware} / {cell.strategy} / {nodes}"
    return f"{cell.hardware} / {cell.variant} / {cell.quantization} / {cell.strategy} / {nodes}"


def cookbook_of(model: Model, config: PlanConfig) -> Cookbook | None:
    """The revision of the model's cookbook page the plan uses (--cookbook-revision; default the newest kept)."""
    if not model.cookbook_revisions:
        return model.cookbook
    return pick_revision(model.cookbook_revisions, model.cookbook_seed, config.cookbook_revision)


def _wanted_speculative(book: Cookbook, config: PlanConfig) -> str | None:
    """The speculative overlay the user asks for: the page's default (None), its Non-Spec recipe
    (--no-speculative) or its speculative one (--speculative); None for a page without overlays."""
    if not book.default_speculative:
        return None
    if config.speculative is None:
        return book.default_speculative
    if config.speculative is False:
        return "none"
    return book.default_speculative if book.default_speculative != "none" else "dspark"


def choose_cell(model: Model, platform: Platform, config: PlanConfig) -> CellChoice:
    """The cookbook cell for this platform, PD role, strategy (default: the cookbook's), node count
    and speculative overlay."""
    book = cookbook_of(model, config)
    if book is None:
        return NO_COOKBOOK
    if book.no_cell == "knobs" and config.speculative and not book.default_speculative:
        why = (
            f"the {book.page} page's Deploy command has no speculative option: the plan is the project's knob-built one"
        )
        return CellChoice(None, config.strategy or "", "", why, source=book.source)
    strategy = config.strategy or book.default_strategy
    role = config.pd_role or "unified"
    verified = [cell_label(c) for c in book.cells if c.verified]
    base: dict[str, Any] = {"strategy": strategy, "verified_cells": verified, "source": book.source}
    on_platform = [c for c in book.cells if c.hardware == platform.id and c.model_name in ("", model.hf_id)]
    if not on_platform:
        said = book.pending.get(platform.id, "not listed by the page")
        why = f"the SGLang cookbook ({book.revision[:8]}) has no {model.id} cell for {platform.id}: {said}"
        if book.no_cell == "knobs":
            return CellChoice(
                None, strategy, "", why + "; the plan is the project's knob-built one", source=book.source
            )
        return CellChoice(None, status="no-cell", explanation=why, **base)
    matching = [c for c in on_platform if c.strategy == strategy and c.role == role]
    if not matching and config.strategy is None:
        # as the page snaps a selection to a real cell: the platform's first cell of this role
        strategy = next((c.strategy for c in on_platform if c.role == role), strategy)
        base["strategy"] = strategy
        matching = [c for c in on_platform if c.strategy == strategy and c.role == role]
    if config.nnodes is not None:
        matching = [c for c in matching if c.nodes == config.nnodes]
    if not matching and book.no_cell == "knobs":
        why = f"the SGLang cookbook ({book.revision[:8]}) has no {model.id} cell for {platform.id} {role} {strategy}"
        why += f" on {config.nnodes} node(s)" if config.nnodes is not None else ""
        return CellChoice(None, strategy, "", why + "; the plan is the project's knob-built one", source=book.source)
    if not matching:
        have = "; ".join(dict.fromkeys(cell_label(c) for c in on_platform))
        why = f"the SGLang cookbook ({book.revision[:8]}) has no {model.id} cell for {platform.id} {role} {strategy}"
        why += f" on {config.nnodes} node(s)" if config.nnodes is not None else ""
        return CellChoice(None, status="no-cell", explanation=f"{why} (its cells there: {have})", **base)
    spec = _wanted_speculative(book, config)
    overlay_note = ""
    if spec is not None:
        same = [c for c in matching if c.speculative == spec]
        if not same:
            overlay_note = f"; the page offers no {spec} overlay for this cell, so it shows the cell without it"
            same = [c for c in matching if c.speculative == "none"] or matching
        matching = same
    cell = matching[0]
    status = "verified" if cell.verified else "unverified"
    marked = "verified" if cell.verified else "NOT verified"
    why = f"cell {cell_label(cell)} ({book.revision[:8]}): SGLang marks it {marked}"
    if cell.note:
        why += f" ({cell.note})"
    if cell.warn:
        why += f"; the page says: {cell.warn}"
    return CellChoice(cell, status=status, explanation=why + overlay_note, **base)


def cell_config(config: PlanConfig, cell: CookbookCell, model: Model) -> PlanConfig:
    """The config with the cell's knob values where the user set none, the cell's node count and
    the page's docker image."""
    _, flags = parse_extra_args(_tokens(cell))
    updates: dict[str, Any] = {}
    image = cell.image or (model.cookbook.docker_images.get(cell.hardware) if model.cookbook else None)
    if config.docker_image is None and image:
        updates["docker_image"] = image
    for item in flags:
        knob = _KNOB_OF_FLAG.get(canonical_flag(item.flag))
        if knob and getattr(config, knob) is None:
            updates[knob] = item.value
    if config.nnodes is None:
        updates["nnodes"] = cell.nodes
    if cell_port(cell, config) != config.port:
        updates["port"] = cell_port(cell, config)
    if config.draft_model_path is None:
        for item in flags:
            if canonical_flag(item.flag) == "--speculative-draft-model-path":
                updates["draft_model_path"] = item.value
    return PlanConfig.model_validate({**config.model_dump(), **updates}) if updates else config


def cell_port(cell: CookbookCell, config: PlanConfig) -> int:
    """The port: the user's, else the one the page serves this PD role on (decode 30100), else the default."""
    if cell.port is not None and config.port == PlanConfig.model_fields["port"].default:
        return cell.port
    return config.port


def cell_args(
    cell: CookbookCell, config: PlanConfig, model_path: str, parsers: dict[str, str | None] | None = None
) -> list[tuple[str, ArgValue | None]]:
    """The cell's flags in the page's order, placeholders filled and the user's knobs in place; the
    model's parsers (`parsers`, flag -> value) join a cell that has none, as the page's Parsers
    row adds them on top (kimi-k2.6: cells never carry them)."""
    _, flags = parse_extra_args(_tokens(cell))
    filled = {"{{MODEL_NAME}}": model_path, "{{HOST_IP}}": config.host, "{{PORT}}": str(cell_port(cell, config))}
    args: list[tuple[str, ArgValue | None]] = []
    for item in flags:
        value = item.value
        if isinstance(value, str):
            value = filled.get(value, value)
        knob = _KNOB_OF_FLAG.get(canonical_flag(item.flag))
        if knob and getattr(config, knob) is not None:
            value = getattr(config, knob)
        if canonical_flag(item.flag) == "--speculative-draft-model-path" and config.draft_model_path:
            value = config.draft_model_path
        args.append((item.flag, value))
    present = {canonical_flag(f) for f, _ in args}
    tail: list[tuple[str, ArgValue | None]] = []
    for flag, knob in _KNOB_OF_FLAG.items():
        if flag not in present and getattr(config, knob) is not None:
            tail.append((flag, getattr(config, knob)))
    for parser_flag, parser in (parsers or {}).items():
        if parser_flag not in present and parser:
            tail.append((parser_flag, parser))
    if config.enable_metrics and METRICS_FLAG not in present:
        tail.append((METRICS_FLAG, True))
    if config.api_key_env:
        tail.append(("--api-key", env_ref(config.api_key_env)))
    cut = next((i for i, (f, _) in enumerate(args) if f == "--host"), len(args))
    return args[:cut] + tail + args[cut:]


def cell_flag_warnings(cell: CookbookCell, source: str) -> list[RuleResult]:
    """The cell's flags read by SGLang 0.5.23's option table (server_options.py): an option that
    release does not know, or spells ambiguously, is a warning naming it (the cookbook's cells may
    target a newer image than the release the table comes from)."""
    filled = {"{{MODEL_NAME}}": "model", "{{HOST_IP}}": "127.0.0.1", "{{PORT}}": "30000"}
    _, flags = parse_extra_args([filled.get(t, t) for t in _tokens(cell)])
    _, found = read_extra_options(flags)
    return [
        RuleResult(
            id="cookbook-flag-not-in-sglang-release",
            severity="warning",
            kind="rule",
            message=f"cookbook cell {cell_label(cell)}: " + r.message.removeprefix("--extra-arg "),
            fix="run the cell on the image the cookbook names (the plan's docker form), or replace the flag with "
            "the spelling your SGLang release has (e.g. --cuda-graph-max-bs-decode)",
            source=f"{source}; the option table of SGLang 0.5.23 (srt/server_args.py, sgl-project/sglang)",
        )
        for r in found
    ]


def node_env(cell: CookbookCell | None, config: PlanConfig, rank: int) -> dict[str, str]:
    """The per-node environment the page asks for beside the cell (the cross-node NIC, this node's
    address), its placeholders filled from --ifname / --node-ip or left as required references."""
    if cell is None:
        return {}
    nic = config.ifname or env_ref("IFNAME", "IFNAME to the cross-node network interface, e.g. bond0")
    ips = config.node_ips
    ip = ips[rank] if rank < len(ips) else env_ref(f"NODE{rank}_IP", f"NODE{rank}_IP to the address of node {rank}")
    fill = {"<your-nic>": nic, "<this-node-ip>": ip}
    return {name: fill.get(value, value) for name, value in cell.multi_node_env.items()}


def _tokens(cell: CookbookCell) -> list[str]:
    return [token for flag in cell.flags for token in shlex.split(flag)]
