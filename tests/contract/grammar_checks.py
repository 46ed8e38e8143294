"""The constraint SGLang would decode under, checked against what the emulator generated (bench env).

SGLang hands ``response_format`` and a forced tool call to the engine as sampling params
(protocol.py ``to_sampling_params``: ``json_schema`` or ``structural_tag``), and xgrammar compiles
them into the grammar that masks every decoded token. With the kimi_k2 reasoning parser the
grammar starts after ``</think>`` (serving_chat.py ``_set_json_grammar_start``: reasoning-gated).
So a real server can only emit text after the reasoning that the grammar accepts; this module
builds that grammar with xgrammar itself (the version SGLang pins) from the params SGLang's own
code produced for the request, and asks whether the emulator's text, rebuilt as the engine's raw
output by replay.py, is accepted.
"""

from __future__ import annotations

import json
from typing import Any

THINK_CLOSE = "</think>"


def grammar_for(params: dict[str, Any]) -> Any:
    """xgrammar's Grammar for the request's constraint; None when it has none."""
    import xgrammar as xg
    from xgrammar.structural_tag import StructuralTag, StructuralTagItem

    if params.get("json_schema"):
        return xg.Grammar.from_json_schema(params["json_schema"])
    tag = params.get("structural_tag")
    if not tag:
        return None
    data = json.loads(tag) if isinstance(tag, str) else tag
    if "structures" in data:  # the legacy form: SGLang's grammar backend converts it the same way
        items = [
            StructuralTagItem(begin=s["begin"], schema=s.get("schema") or {}, end=s["end"]) for s in data["structures"]
        ]
        converted = StructuralTag.from_legacy_structural_tag(items, data["triggers"])
        if data.get("at_least_one"):
            converted.format.at_least_one = True
        return xg.Grammar.from_structural_tag(converted)
    return xg.Grammar.from_structural_tag(json.dumps(data))


def after_reasoning(raw: str, thinking: bool) -> str:
    if thinking and THINK_CLOSE in raw:
        return raw.split(THINK_CLOSE, 1)[1]
    return raw


def check(params: dict[str, Any], script: dict[str, Any], thinking: bool, status: int) -> list[tuple[str, Any, Any]]:
    """Mismatch rows: the generated text the grammar rejects (or a constraint the emulator ignored)."""
    import xgrammar.testing as xt

    if status != 200:
        return []
    try:
        grammar = grammar_for(params)
    except Exception as exc:  # noqa: BLE001 - xgrammar's InvalidStructuralTagError, checked by its text
        if "requires tokenizer_info" not in str(exc):
            raise
        # kimi_k3's structural tag names special tokens (<|open|>...): xgrammar needs the model's own
        # tokenizer to build it, which this machine does not have; those cases are judged by SGLang's
        # parsers alone (the comparison in sglang_check.py), not by the grammar.
        return []
    if grammar is None:
        return []
    outputs = script.get("finals") or (script.get("stream") or [])[-1:]
    rows = []
    for i, out in enumerate(outputs):
        text = after_reasoning(out.get("text") or "", thinking)
        if not xt._is_grammar_accept_string(grammar, text):
            kind = "json_schema" if params.get("json_schema") else "structural_tag"
            rows.append((f"choices[{i}] text under the {kind} constraint", text[:300], "<text the grammar accepts>"))
    return rows
