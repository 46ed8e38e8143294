"""SGLang's own answer to what the emulator's PD roles expect and answer, for the capture in argv[1].

Usage (the bench tool env's python, which has the real ``sglang`` package):

    .venvs/bench/bin/python tests/contract/pd_check.py captured.json report.json

Judged by SGLang 0.5.23's code, unchanged:

* the bodies sglang-router sends a PD pair (the request plus bootstrap_host / bootstrap_port /
  bootstrap_room) parse into ``GenerateReqInput`` (managers/io_struct.py) and the OpenAI
  ``ChatCompletionRequest`` / ``CompletionRequest`` (entrypoints/openai/protocol.py,
  ``PDRoutingFields``) with the three values intact;
* the prefill server's finish reason is ``FINISH_LENGTH(length=0).to_json()`` (disaggregation/prefill.py);
* the fake bootstrap host (disaggregation/utils.py), the bootstrap port's default
  (arg_groups/fields/disagg.py ``Disagg``) and the timeout variable's default (environ.py) are the
  emulator's; the refusal and handshake-failure messages start as the scheduler's and decode's do.

Writes {"sglang_version", "mismatches": [{"case", "where", "emulator", "sglang"}]}; exits 1 on mismatches.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any


def main() -> int:
    import sglang
    from sglang.srt.arg_groups.fields.disagg import Disagg
    from sglang.srt.disaggregation import decode as decode_mod
    from sglang.srt.disaggregation.utils import FAKE_BOOTSTRAP_HOST
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest, CompletionRequest
    from sglang.srt.environ import envs
    from sglang.srt.managers import scheduler as scheduler_mod
    from sglang.srt.managers.io_struct import GenerateReqInput
    from sglang.srt.managers.schedule_batch import FINISH_LENGTH

    captured = json.loads(Path(sys.argv[1]).read_text())
    mismatches: list[dict[str, Any]] = []

    def check(case: str, where: str, emulator: Any, sglang_value: Any) -> None:
        if emulator != sglang_value:
            mismatches.append({"case": case, "where": where, "emulator": emulator, "sglang": sglang_value})

    parsers = {
        "/generate": lambda b: GenerateReqInput(**b),
        "/v1/chat/completions": ChatCompletionRequest.model_validate,
        "/v1/completions": CompletionRequest.model_validate,
    }
    for sent in captured["router_bodies"]:
        parsed = parsers[sent["route"]](sent["body"])
        for key in ("bootstrap_host", "bootstrap_port", "bootstrap_room"):
            check(sent["route"], key, sent["body"][key], getattr(parsed, key))
    check("prefill /generate", "meta_info.finish_reason", captured["prefill_finish_reason"], FINISH_LENGTH(0).to_json())
    check("constants", "FAKE_BOOTSTRAP_HOST", captured["fake_bootstrap_host"], FAKE_BOOTSTRAP_HOST)
    check(
        "constants",
        "disaggregation_bootstrap_port",
        captured["default_bootstrap_port"],
        Disagg().disaggregation_bootstrap_port,
    )
    timeout = envs.SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT.get()
    check("constants", "SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", captured["default_timeout_s"], float(timeout))
    refusal = "Invalid request: Disaggregated request received without bootstrap room id."
    source = inspect.getsource(scheduler_mod)  # the message is an f-string over two lines there
    parts = ('"Invalid request: Disaggregated request received without "', 'f"bootstrap room id. {req.rid=}"')
    check("refusal", "scheduler.py has the message", True, all(part in source for part in parts))
    check("refusal", "emulator's message", captured["missing_room_message"][: len(refusal)], refusal)
    handshake = "Decode handshake failed for request rank="
    check("handshake", "decode.py has the message", True, handshake in inspect.getsource(decode_mod))
    check("handshake", "emulator's message", captured["handshake_message"][: len(handshake)], handshake)
    Path(sys.argv[2]).write_text(json.dumps({"sglang_version": sglang.__version__, "mismatches": mismatches}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
