"""An SGLang plugin for the CPU rehearsal (entry point group `sglang.srt.plugins`, loaded by every
SGLang process at start), and the logit processor that scripts a tiny model's output.

`register()`: SGLang's torch_native attention backend has no DeepSeek attention handler, so MLA
prefill took the MHA path and read K from the latent cache (a shape error, or silent garbage when
kv_lora_rank happens to equal qk_nope + qk_rope). It is registered here with the absorbed-MLA
dispatcher that decode already uses (AttentionBackendRegistry in
sglang/srt/models/deepseek_common/attention_backend_handler.py).

`ScriptedOutput`: random weights write random text, so SGLang's reasoning and tool-call parsers would
see their markers only by chance. A request carrying `custom_logit_processor` (this class, pickled by
reference: see kimi_runbooks.invoke for the client side) and `custom_params={"token_ids": [...]}`
emits exactly those tokens, then samples freely; end the script with an EOS id.
"""

from __future__ import annotations

from typing import Any

import torch
from sglang.srt.sampling.custom_logit_processor import CustomLogitProcessor

POSITION = "_kimi_runbooks_script_position"


def register() -> None:
    from sglang.srt.models.deepseek_common.attention_backend_handler import (
        AttentionBackendRegistry,
        _dispatch_mla_subtype,
    )

    AttentionBackendRegistry.register("torch_native", _dispatch_mla_subtype)


class ScriptedOutput(CustomLogitProcessor):
    """Forces custom_params["token_ids"][n] as the n-th output token of the request.

    The position is counted on the request object, not read from req.output_ids: with SGLang's overlap
    scheduler the next step's logits are processed before the previous token is appended."""

    def __call__(self, logits: torch.Tensor, custom_param_list: list[dict[str, Any]] | None = None) -> torch.Tensor:
        for row, params in enumerate(custom_param_list or []):
            script = (params or {}).get("token_ids")
            if not script:
                continue
            req = params["__req__"]
            position = getattr(req, POSITION, 0)
            setattr(req, POSITION, position + 1)
            if position < len(script):
                logits[row, :] = float("-inf")
                logits[row, int(script[position])] = 0.0
        return logits
