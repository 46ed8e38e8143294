"""Compose a cookbook page's commands from its config as the page's Deploy panel does.

Our own rules, read from the page engine (sgl-project/sglang docs_new/src/snippets/_deployment.jsx):
a cell is picked by its match (hw + the match dims); overlay rows (speculative decoding, HiCache)
add flags and env on top, an overlay's stripPrefixes removes the cell's flags of that family and
puts its own same-family flag in their place; the Kimi-K3 page pins the ratio calculator's
--mamba-full-memory-ratio before --host; a PD role serves on its own port (prefill 30000, decode
30100); a multi-node cell gets --nnodes N --node-rank --dist-init-addr after its last parallelism
flag; the docker image is keyed hw|quant|strategy, hw|quant, hw, else lmsysorg/sglang:dev. One
Recipe is one cell under one overlay choice, with {{PLACEHOLDERS}} left for the plan to fill.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from . import mamba_ratio

PD_SERVE_PORTS = {"prefill": 30000, "decode": 30100}
PARALLELISM_ANCHORS = ("--enable-dp-attention", "--dp", "--tp-size", "--tp")
FALLBACK_IMAGE = "lmsysorg/sglang:dev"
NODE_PLACEHOLDERS = {"{{LOCAL_IP}}": "<this-node-ip>", "{{NETWORK_IFACE}}": "<your-nic>"}
"""Per-node values a cell's env names: the plan fills them per node (multi_node_env)."""


@dataclass
class Recipe:
    """One cell of a page under one overlay choice, composed as the page composes it."""

    hardware: str
    strategy: str
    nodes: int
    verified: bool
    model_name: str
    image: str
    """The docker image the page names for this cell ('' none: the page falls back to FALLBACK_IMAGE)."""
    flags: list[str]
    env: dict[str, str] = field(default_factory=dict)
    multi_node_env: dict[str, str] = field(default_factory=dict)
    role: str = ""
    """The page's PD Mode (unified / prefill / decode); '' for a page without that row."""
    speculative: str = ""
    """The speculative-decoding overlay option (none / dspark); '' for a page without overlays."""
    variant: str = "default"
    quantization: str = ""
    port: int | None = None
    """The port a PD role serves on (the page rewrites --port); None: the plan's."""
    hints: list[str] = field(default_factory=list)
    warn: str | None = None
    source_commit: str = ""

    @property
    def key(self) -> str:
        parts = [self.hardware, self.role or f"{self.variant}/{self.quantization}", self.strategy]
        return "/".join(parts) + (f" spec={self.speculative}" if self.speculative else "")

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, "", [], {})} | {"verified": self.verified}


def _token(flag: str) -> str:
    return flag.replace("=", " ").split()[0] if flag.strip() else ""


def overlay_compose(cell_flags: list[str], strip: list[str], add: list[str]) -> list[str]:
    """Cell flags with an overlay's: appended, except a flag of a stripped family, which takes the
    stripped flag's place (each added flag used once)."""
    if not strip:
        return [*cell_flags, *add]
    used: set[int] = set()
    out: list[str] = []
    for flag in cell_flags:
        tok = _token(flag)
        if tok not in strip:
            out.append(flag)
            continue
        for i, extra in enumerate(add):
            if i not in used and _token(extra) == tok:
                used.add(i)
                out.append(extra)
    return out + [extra for i, extra in enumerate(add) if i not in used]


def with_nodes(flags: list[str], nodes: int) -> list[str]:
    """The flags with the page's multi-node trio after the last parallelism flag (else --model-path)."""
    if nodes <= 1:
        return list(flags)
    out = list(flags)
    at = -1
    for anchor in PARALLELISM_ANCHORS:
        at = next((i for i, f in enumerate(out) if _token(f) == anchor), -1)
        if at != -1:
            break
    if at == -1:
        at = next((i for i, f in enumerate(out) if f.startswith("--model-path")), -1)
    out[at + 1 : at + 1] = [f"--nnodes {nodes}", "--node-rank {{NODE_RANK}}", "--dist-init-addr {{NODE0_IP}}:20000"]
    return out


def _picked(selection: dict[str, Any]) -> list[dict[str, Any]]:
    """The overlay options the page applies at this selection: a visible row's chosen option, if
    visible and not disabled."""
    return [option for _, option in _picked_rows(selection)]


def _picked_rows(selection: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    picked = []
    for row in selection["rows"]:
        options = [o for o in row["options"] if o["visible"]]
        if not row["visible"] or not options:
            continue
        choice = next((o for o in row["options"] if o["id"] == selection["overlay"][row["id"]]), None)
        if choice is not None and not choice["disabled"]:
            picked.append((row["id"], choice))
    return picked


def _image(images: dict[str, str], hw: str, quant: str, strategy: str) -> str:
    """The image the page names for the cell; '' when it names none (the page then shows
    FALLBACK_IMAGE, a nightly; the plan keeps the platform's pinned image instead)."""
    return images.get(f"{hw}|{quant}|{strategy}") or images.get(f"{hw}|{quant}") or images.get(hw) or ""


def _model_name(names: dict[str, str], match: dict[str, Any]) -> str:
    hw, variant, quant = match.get("hw"), match.get("variant"), match.get("quant")
    keys = [f"{hw}|{variant}|{quant}", f"{variant}|{quant}", f"{hw}|{quant}", quant, hw, "default"]
    return next((names[k] for k in keys if k in names and names[k]), "")


def _nodes(cell: dict[str, Any]) -> int:
    nodes = cell["match"].get("nodes")
    if nodes is None:
        return int(cell["nnodes"] or 1)
    if nodes == "single":
        return 1
    head, _, count = str(nodes).partition("-")
    return int(count) if head == "multi" and count.isdigit() else 1


def _hint_env(hints: list[str]) -> dict[str, str]:
    """NAME=<your-nic> / NAME=<this-node-ip> lines of the page's multi-node hints: per-node env."""
    env: dict[str, str] = {}
    for line in hints:
        name, eq, rest = line.strip().partition("=")
        value = rest.split("#")[0].strip()
        if eq and name.isidentifier() and value in NODE_PLACEHOLDERS.values():
            env[name] = value
    return env


def _env(entries: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The env list as a mapping, per-node placeholders split off (they differ between nodes)."""
    env: dict[str, str] = {}
    per_node: dict[str, str] = {}
    for entry in entries:
        name, _, value = entry.partition("=")
        if value in NODE_PLACEHOLDERS:
            per_node[name] = NODE_PLACEHOLDERS[value]
        else:
            env[name] = value
    return env, per_node


def _default_overlay(config: dict[str, Any]) -> dict[str, str]:
    return {
        d["id"]: d["default"] if d["default"] is not None else (d["options"] or [""])[0] for d in config["overlayDims"]
    }


def compose(config: dict[str, Any], commit: str, page_computes: list[str] | None = None) -> list[Recipe]:
    """Every cell of a read config (jsconfig.read_config) under the default overlay choice and each
    selectable option of its first overlay row (spec: none / dspark); the other rows at their default."""
    computes = set(page_computes or [])
    default = _default_overlay(config)
    first = config["overlayDims"][0]["id"] if config["overlayDims"] else None
    recipes: list[Recipe] = []
    for cell in config["cells"]:
        match = cell["match"]
        nodes = _nodes(cell)
        env, per_node = _env(cell["env"])
        if nodes > 1:
            per_node = _hint_env(config["multiNodeHints"].get(match["hw"], [])) | per_node
        selections = [
            s for s in cell["selections"] if all(s["overlay"][k] == v for k, v in default.items() if k != first)
        ]
        seen: list[tuple[list[str], dict[str, str]]] = []
        for selection in selections or [{"overlay": {}, "rows": []}]:
            picked = _picked(selection)
            first_pick = next((o["id"] for row, o in _picked_rows(selection) if row == first), "none")
            strip = [p for o in picked for p in o["stripPrefixes"]]
            add = [f for o in picked for f in o["flags"]]
            add_env = [e for o in picked for e in o["env"]]
            base = list(cell["flags"])
            if "mamba_full_memory_ratio" in computes and not any(
                f.startswith("--mamba-full-memory-ratio") for f in base
            ):
                value = mamba_ratio.ratio(overlay_compose(base, strip, add), [*cell["env"], *add_env])
                host = next((i for i, f in enumerate(base) if f.startswith("--host")), len(base))
                base.insert(host, f"--mamba-full-memory-ratio {mamba_ratio.page_text(value)}")
            flags = overlay_compose(base, strip, add)
            role = match.get("pdMode", "")
            port = PD_SERVE_PORTS.get(role)
            overlay_env, overlay_node = _env(add_env)
            verified = cell["verified"]
            if (flags, env | overlay_env) in seen:
                continue  # a disabled choice: the page shows the same command as another
            seen.append((flags, env | overlay_env))
            recipes.append(
                Recipe(
                    hardware=match["hw"],
                    strategy=match["strategy"],
                    nodes=nodes,
                    verified=verified is True or verified == "verified",
                    model_name=_model_name(config["modelNames"], match),
                    image=_image(config["dockerImages"], match["hw"], match.get("quant", ""), match["strategy"]),
                    flags=flags,
                    env=env | overlay_env,
                    multi_node_env=per_node | overlay_node,
                    role=role,
                    speculative=first_pick if first == "spec" else "",
                    variant=match.get("variant", "default"),
                    quantization=match.get("quant", ""),
                    port=port,
                    hints=[h for o in picked for h in o["hints"]],
                    warn=cell["warn"],
                    source_commit=commit,
                )
            )
    return recipes


def page_command(recipe: Recipe, placeholders: dict[str, str]) -> str:
    """The recipe as the page prints it in python mode: env lines, `sglang serve`, one flag a line,
    the multi-node trio in place and placeholders at their defaults."""
    flags = with_nodes(recipe.flags, recipe.nodes)
    if recipe.port is not None:
        flags = [f"--port {recipe.port}" if _token(f) == "--port" else f for f in flags]
    env = [f"{k}={v}" for k, v in recipe.env.items()]
    env += [
        f"{k}={'{{LOCAL_IP}}' if v == '<this-node-ip>' else '{{NETWORK_IFACE}}'}"
        for k, v in recipe.multi_node_env.items()
    ]
    text = "".join(e + " \\\n" for e in env) + "sglang serve \\\n" + " \\\n".join("  " + f for f in flags)
    values = {**placeholders, "MODEL_NAME": recipe.model_name}
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    return text
