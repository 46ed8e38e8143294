"""The invoke stage's structured-output, forced-call and Kimi Vendor Verifier checks (issue 27), on the emulator.

Each passes on the emulator and fails, with a reason naming what broke, under the emulator fault
that breaks it.
"""

from __future__ import annotations

import pytest

from kimi_runbooks import invoke
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.invoke.kvv import KVV_CHECKS
from kimi_runbooks.invoke.structured_checks import STRUCTURED_CHECKS

MODEL = "moonshotai/Kimi-K2.6"
FAST = dict(timeout=30.0, max_tokens_thinking=4096, concurrency=1, parallel=1)
NAMES = [*STRUCTURED_CHECKS, *KVV_CHECKS]


def _run(fault=None):
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, fault=fault))
    try:
        return {
            r.name: r
            for r in invoke.run_all(
                invoke.resolve_target(base_url=url, model=MODEL), invoke.InvokeOptions(checks=NAMES, **FAST)
            )
            if r.name in NAMES
        }
    finally:
        stop()


def test_every_new_check_passes_on_the_emulator():
    results = _run()
    assert {n: r.status for n, r in results.items()} == {n: "pass" for n in NAMES}, {
        n: r.reason for n, r in results.items() if r.status != "pass"
    }
    assert "counted by the emulator's tokenizer and chat template" in results["kvv_prompt_tokens"].reason
    assert "SGLang does not fix Kimi's sampling parameters" in results["kvv_params"].reason


STRUCTURED = {"structured_json_schema", "structured_json_schema_stream"}
STRUCTURED |= {"structured_json_object", "structured_json_object_stream"}
FORCED = {"required_after_result", "required_after_result_stream", "named_after_result", "named_after_result_stream"}
FAULTS = {
    "response-format-ignored": (STRUCTURED, "content is not JSON"),
    "tool-choice-ignored": (FORCED, "no tool call came back"),
    "bad-tool-json": (
        {"kvv_tool_schema", "kvv_tool_schema_stream", "required_after_result", "required_after_result_stream",
         "named_after_result", "named_after_result_stream"},
        "not JSON",
    ),
    "prompt-tokens-off": ({"kvv_prompt_tokens"}, "usage.prompt_tokens"),
}  # fmt: skip


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_fails_exactly_the_checks_it_breaks(fault):
    expected, words = FAULTS[fault]
    results = _run(fault)
    failed = {n for n, r in results.items() if r.status == "fail"}
    assert failed == expected, {n: r.reason for n, r in results.items() if r.status == "fail"}
    for name in failed:
        assert words in results[name].reason, (name, results[name].reason)
