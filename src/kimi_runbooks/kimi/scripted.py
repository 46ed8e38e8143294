"""Scripting a rehearsal's tiny model, so SGLang's own parsers get real Kimi output to split.

A random-weight model writes its markers only by chance. SGLang's custom logit processor (server flag
--enable-custom-logit-processor; request fields `custom_logit_processor` and `custom_params`, see
python/sglang/srt/sampling/custom_logit_processor.py, sgl-project/sglang) lets a request force the
tokens it wants: the rehearsal's server carries `ScriptedOutput` in its plugin module
(tools/scripts/sglang_cpu_site/kimi_runbooks_cpu.py). SGLang reads the processor as a pickle, and a
pickle of a class by reference is just its module and name, so the client needs neither dill nor
torch to name it.
"""

from __future__ import annotations

import json
from typing import Any

PROCESSOR_MODULE, PROCESSOR_CLASS = "kimi_runbooks_cpu", "ScriptedOutput"


def processor_field() -> str:
    """The `custom_logit_processor` value: CustomLogitProcessor.to_str()'s JSON around a by-reference pickle."""
    pickled = f"c{PROCESSOR_MODULE}\n{PROCESSOR_CLASS}\n.".encode()  # pickle's GLOBAL opcode, then STOP
    return json.dumps({"callable": pickled.hex()})


def scripted_fields(token_ids: list[int]) -> dict[str, Any]:
    """The request fields that make the server emit exactly `token_ids` (end them with an end-of-turn id)."""
    return {"custom_logit_processor": processor_field(), "custom_params": {"token_ids": list(token_ids)}}
