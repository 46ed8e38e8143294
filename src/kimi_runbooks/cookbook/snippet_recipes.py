"""A deployment snippet's default command on each hardware, as the model's launch knobs there.

The Kimi-K2.5 and Kimi-K2.7-Code pages hold no config cells: their snippets build one command per
selection (snippets.py keeps each, generated/<snippet>@<commit8>.yaml). A snippet marked
`plan_knobs: true` in sources.yaml gives the plan its model's recipe on every hardware it lists: the
command at the page's default selection with that hardware, read flag by flag (tp, whether
--mem-fraction-static is set at all, --kv-cache-dtype, env, and any other flag such as
`--attention-backend tokenspeed_mla` as an extra argument). Without it the plan would reuse the
platform's recipe, which is Kimi-K2.6's (params/platforms `recipe:`), and print what that page
prints instead of this one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..catalog.flags import canonical_flag
from ..catalog.params_models import Model, ParamsError, Recipe
from .kept_files import load_generated
from .snippets import default_command, parse_command

KNOB_FIELDS = {
    "--tp": "tp",
    "--dp": "dp",
    "--ep": "ep",
    "--enable-dp-attention": "enable_dp_attention",
    "--mem-fraction-static": "mem_fraction_static",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--context-length": "context_length",
}
"""Page flags that are recipe knobs (Recipe fields), canonical spelling -> field."""

PLAN_OWNED = {"--model-path", "--trust-remote-code", "--reasoning-parser", "--tool-call-parser", "--host", "--port"}
"""Page flags the plan writes from the model and the user's options, not from a recipe (the page's
parsers are the model's; tests/cookbook/test_snippets.py holds the plan to the page for both)."""


def snippet_recipe(command: str, model_id: str, where: str) -> Recipe:
    """One shown command as a Recipe for `model_id`; `where` names the snippet, commit and hardware."""
    parsed = parse_command(command)
    if parsed is None:
        raise ParamsError(f"{where} shows no command ({command.splitlines()[0]!r})")
    fields: dict[str, Any] = {}
    extra: list[str] = []
    for flag, value in parsed["flags"].items():
        canon = canonical_flag(flag)
        if canon in PLAN_OWNED:
            continue
        field = KNOB_FIELDS.get(canon)
        if field is None:
            extra += [flag, *value.split()]
        elif field == "enable_dp_attention":
            fields[field] = True
        elif field == "kv_cache_dtype":
            fields[field] = value
        else:
            fields[field] = float(value) if field == "mem_fraction_static" else int(value)
    if "tp" not in fields:
        raise ParamsError(
            f"{where} sets no --tp. Fix: mark the snippet `plan_knobs: false` in params/cookbook/sources.yaml"
        )
    return Recipe(model=model_id, env=parsed["env"], extra_args=extra, source=where, **fields)


def attach_snippet_recipes(
    params_dir: Path, models: dict[str, Model], platforms: set[str], sources: dict[str, Any]
) -> dict[str, Model]:
    """The models with the recipes of the kept snippets marked `plan_knobs: true` (newest revision),
    keyed by platform; a snippet's model is the one whose hf_id its default command serves."""

    by_hf = {m.hf_id: m.id for m in models.values()}
    recipes: dict[str, dict[str, Recipe]] = {}
    for name, info in sources.get("snippets", {}).items():
        if not info.get("plan_knobs") or not info.get("revisions"):
            continue
        commit = info["revisions"][0]["commit"]
        data = load_generated(params_dir, name, commit)
        for hw in dict.fromkeys(c["values"]["hardware"] for c in data["combinations"]):
            if hw not in platforms:
                continue
            command = default_command(data, hardware=hw)
            where = (
                f"SGLang cookbook deployment snippet {info['path']} at {commit} (hardware={hw}, the page's defaults)"
            )
            parsed = parse_command(command)
            hf_id = parsed["flags"].get("--model-path", "") if parsed else ""
            if hf_id not in by_hf:
                raise ParamsError(
                    f"{where} serves {hf_id or 'no model'!r}, which no params/models file has as hf_id. "
                    "Fix: add the model, or mark the snippet `plan_knobs: false` in params/cookbook/sources.yaml"
                )
            recipes.setdefault(by_hf[hf_id], {})[hw] = snippet_recipe(command, by_hf[hf_id], where)
    return {
        mid: m.model_copy(update={"snippet_recipes": recipes[mid]}) if mid in recipes else m
        for mid, m in models.items()
    }
