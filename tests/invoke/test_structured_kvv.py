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
from kimi_runbooks.kimi.tokenizer_files import write_tokenizer_dir

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


# ------------------------------------------------- the run's tokenizer against a server that is not the emulator


@pytest.fixture(scope="module")
def sglang_like_url():
    """The emulator without its emulated marker: to the checks, a real (external) server."""
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.01, log_startup=False, strict_sglang=True))
    yield url
    stop()


def test_the_prompt_token_check_counts_with_the_tokenizer_it_is_given(sglang_like_url, tmp_path, require_tool_env):
    """Issue 40 item 4: the runbook's tokenizer reached the speed stage only; here it is counted with."""
    require_tool_env("bench")
    tokenizer = write_tokenizer_dir(tmp_path / "tok")  # the emulator's own: counts equal the server's
    handle = invoke.resolve_target(base_url=sglang_like_url, model=MODEL)
    options = invoke.InvokeOptions(checks=["kvv_prompt_tokens"], **FAST)
    result = invoke.run_all(handle, options, tokenizer=str(tokenizer))[0]
    assert result.status == "pass", result.reason
    assert f"counted by the run's tokenizer {tokenizer}, from the tokenizer parameter" in result.reason


def test_without_a_tokenizer_the_skip_names_the_parameter_to_pass_not_an_internal(sglang_like_url):
    handle = invoke.resolve_target(base_url=sglang_like_url, model=MODEL)
    result = invoke.run_all(handle, invoke.InvokeOptions(checks=["kvv_prompt_tokens"], **FAST))[0]
    assert result.status == "skip"
    assert "Fix: pass tokenizer=" in result.reason and "-p tokenizer DIR" in result.reason
    assert "RunHandle" not in result.reason and "handle.tokenizer" not in result.reason
