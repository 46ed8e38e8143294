"""Contract checks chosen from a model's declared capabilities (invoke/served.py, contracts.py),
end to end against emulators serving Kimi-K3-like and Kimi-K2.7-Code-like test fixtures, and
against emulators that break each contract."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from kimi_runbooks import invoke
from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.emulator import EmulatorSettings, LatencyProfile
from kimi_runbooks.emulator.capabilities import ModelCapabilities
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.invoke.contracts import (
    EFFORT_PROMPTS,
    EMULATED_FAST_FORWARD,
    LONG_CONTEXT_FRACTION,
    effort_order_problems,
)
from kimi_runbooks.invoke.served import ServedModel, checks_for
from kimi_runbooks.invoke.stage import DEFAULT_NAMES
from kimi_runbooks.target.emulated_time import FAST_FORWARD_HEADER
from tests.support.hybrid_models import k3_like, k27_code_like

CONTEXT = 32768
FAST: dict[str, Any] = dict(timeout=30.0, max_tokens_thinking=2048, concurrency=2, parallel=1)


def _settings(model: Any, **overrides: Any) -> EmulatorSettings:
    settings = EmulatorSettings(
        time_scale=0.01,
        log_startup=False,
        model=model.served_name,
        max_model_len=CONTEXT,
        capabilities=ModelCapabilities.from_model(model),
        launch_args={"reasoning_parser": model.default_reasoning_parser, "tool_call_parser": model.tool_call_parser},
    )
    return replace(settings, **overrides)


@pytest.fixture(scope="module")
def k3_url() -> Iterator[str]:
    url, stop = run_in_thread(_settings(k3_like()))
    yield url
    stop()


def _by_name(results: list[invoke.CheckResult]) -> dict[str, invoke.CheckResult]:
    return {r.name: r for r in results}


def _run(url: str, served: ServedModel, checks: list[str] | None = None) -> dict[str, invoke.CheckResult]:
    target = invoke.resolve_target(base_url=url, model=served_name(served))
    return _by_name(invoke.run_all(target, invoke.InvokeOptions(checks=checks, **FAST), served=served))


def served_name(served: ServedModel) -> str:
    return str(served.declared["served_name"])


def _served(model: Any, context: int = CONTEXT) -> ServedModel:
    served = ServedModel.from_model(model, context_length=context)
    return replace(served, declared={**served.declared, "served_name": model.served_name})


# ---------------------------------------------------------------- choosing from capabilities


def test_checks_follow_the_declared_capabilities_not_the_model_name():
    names = list(DEFAULT_NAMES)
    k3 = checks_for(ServedModel.from_model(k3_like()), names)
    assert {"reasoning_effort", "always_thinking", "video", "long_context", "tool_call"} <= set(k3)
    assert "instant" not in k3 and "instant_then_call" not in k3
    code = checks_for(ServedModel.from_model(k27_code_like()), names)
    assert "always_thinking" in code and "reasoning_effort" not in code and "instant" not in code
    # the same fields under another name choose the same checks; a K2.6 keeps instant and gets no effort check
    assert checks_for(ServedModel.from_model(k3_like(id="any-name", hf_id="x/y")), names) == k3
    k26 = checks_for(ServedModel.from_model(load_catalog().model("kimi-k2.6")), names)
    assert "instant" in k26 and "reasoning_effort" not in k26 and "always_thinking" not in k26
    assert "always_thinking_stream_off" not in k3  # only when asked for: it fails on SGLang 0.5.23


def test_served_model_reads_the_plans_parsers_and_context_length():
    from kimi_runbooks.plan import plan

    launch = plan({"platform": "h200", "context_length": 65536})
    served = ServedModel.from_plan(launch)
    assert served.context_length == 65536
    assert served.tool_call_parser == "kimi_k2" and served.ids.expected("f", 2) == "functions.f:2"
    assert ServedModel(tool_call_parser="kimi_k3").ids.expected("f", 2) == "f:2"


def test_a_run_folders_plan_gives_the_served_model(tmp_path):
    from kimi_runbooks.plan import plan
    from kimi_runbooks.rundir import RunFolder

    folder = RunFolder.create(tmp_path / "run", label="t")
    assert ServedModel.of_run(folder) is None  # no plan recorded
    launch = plan({"platform": "h200", "context_length": 65536})
    folder.save_json(RunFolder.PLAN, {"config": launch.config.model_dump(mode="json")})
    served = ServedModel.of_run(folder)
    assert served is not None and served.context_length == 65536 and served.declared["model"] == launch.model.id


def test_without_a_served_model_the_default_checks_are_unchanged(emulator_url: str):
    results = invoke.run_all(
        invoke.resolve_target(base_url=emulator_url, model="moonshotai/Kimi-K2.6"), invoke.InvokeOptions(**FAST)
    )
    names = [r.name for r in results]
    assert [n for n in names if n in invoke.ALL_NAMES] == DEFAULT_NAMES
    assert not set(names) & set(invoke.CONTRACT_CHECKS)


# ---------------------------------------------------------------- a K3-like server keeps its contracts


def test_k3_like_server_passes_every_contract_check(k3_url: str):
    served = _served(k3_like())
    results = _run(k3_url, served)
    failed = {n: r.reason for n, r in results.items() if r.status == "fail"}
    assert not failed, failed
    for level in ("low", "high", "max"):
        assert results[f"reasoning_effort[{level}]"].status == "pass"
    lengths = results["reasoning_effort"].details["reasoning_tokens_by_effort"]
    assert lengths["low"] < lengths["high"] < lengths["max"]
    assert results["always_thinking"].status == "pass"
    assert results["video"].status == "pass" and "placeholder" in results["video"].reason
    long = results["long_context"]
    assert long.status == "pass"
    assert long.details["prompt_tokens"] >= int(CONTEXT * LONG_CONTEXT_FRACTION) * 0.9
    assert results["tool_call"].status == "pass" and results["multi_turn"].status == "pass"
    assert results["instant"].status == "skip" if "instant" in results else True


def test_streamed_thinking_off_shows_sglangs_kimi_k3_leak(k3_url: str):
    """The emulator reproduces SGLang 0.5.23 (think channel streamed as content); the check names it."""
    result = _run(k3_url, _served(k3_like()), ["always_thinking_stream_off"])["always_thinking_stream_off"]
    assert result.status == "fail"
    assert "<|close|>think<|sep|>" in result.reason and "PR 32677" in result.reason


def test_instant_is_skipped_for_a_model_that_always_thinks(k3_url: str):
    result = _run(k3_url, _served(k3_like()), ["instant"])["instant"]
    assert result.status == "skip" and "always thinks" in result.reason


def test_k27_code_like_thinks_even_when_asked_not_to():
    model = k27_code_like()
    url, stop = run_in_thread(_settings(model))
    try:
        results = _run(url, _served(model), ["always_thinking", "always_thinking_stream_off", "tool_call"])
    finally:
        stop()
    assert {n: r.status for n, r in results.items()} == {
        "always_thinking": "pass",
        "always_thinking_stream_off": "pass",  # kimi_k2: the model writes <think>, the parser splits it
        "tool_call": "pass",
    }


# ---------------------------------------------------------------- servers that break a contract


def test_effort_levels_in_the_wrong_order_fail():
    model = k3_like()
    backwards = replace(ModelCapabilities.from_model(model), effort_levels=("max", "high", "low"))
    url, stop = run_in_thread(_settings(model, capabilities=backwards))
    try:
        result = _run(url, _served(model), ["reasoning_effort"])["reasoning_effort"]
    finally:
        stop()
    assert result.status == "fail" and "reasoned less" in result.reason


def test_a_model_that_does_not_think_when_told_not_to_fails_always_thinking():
    model = k3_like()
    optional = replace(ModelCapabilities.from_model(model), thinking="optional")
    url, stop = run_in_thread(_settings(model, capabilities=optional))
    try:
        result = _run(url, _served(model), ["always_thinking"])["always_thinking"]
    finally:
        stop()
    assert result.status == "fail" and "thinking=false: no reasoning_content" in result.reason


def test_video_refused_by_the_server_fails_and_a_model_without_video_skips():
    model = k3_like()
    no_video = replace(ModelCapabilities.from_model(model), video=False)
    url, stop = run_in_thread(_settings(model, capabilities=no_video))
    try:
        refused = _run(url, _served(model), ["video"])["video"]
        skipped = _run(url, _served(k3_like(video=False)), ["video"])["video"]
    finally:
        stop()
    assert refused.status == "fail" and "400" in refused.reason and "video" in refused.reason
    assert skipped.status == "skip" and "video: false" in skipped.reason


def test_long_context_beyond_the_servers_limit_fails_naming_the_size():
    model = k3_like()
    url, stop = run_in_thread(_settings(model, max_model_len=8192))
    try:
        result = _run(url, _served(model, context=CONTEXT), ["long_context"])["long_context"]
    finally:
        stop()
    assert result.status == "fail" and "refused" in result.reason and str(CONTEXT) in result.reason


def test_long_context_on_an_emulator_fast_forwards_the_prefill_and_says_so():
    """The emulator's modelled prefill of the long prompt is not what the check holds the server to:
    it asks the emulator to run that request's clock faster (2.5 s here, 10 s in the demo)."""
    model = k3_like()
    slow = LatencyProfile(ttft_base_ms=1, ttft_per_1k_input_ms=100, itl_base_ms=1, itl_per_running_ms=0)
    url, stop = run_in_thread(_settings(model, profile=slow, time_scale=1.0))
    try:
        result = _run(url, _served(model), ["long_context"])["long_context"]
    finally:
        stop()
    assert result.status == "pass", result.reason
    assert result.details["prompt_tokens"] >= int(CONTEXT * LONG_CONTEXT_FRACTION) * 0.9
    assert result.latency_ms is not None and result.latency_ms < 1000  # modelled: ~2.5 s of prefill
    assert result.details["emulated_fast_forward"] == EMULATED_FAST_FORWARD
    assert f"{EMULATED_FAST_FORWARD}x faster" in result.reason
    assert result.transcript[0]["request"]["headers"] == {FAST_FORWARD_HEADER: str(EMULATED_FAST_FORWARD)}


def test_long_context_is_sized_from_the_kv_pool_when_it_is_smaller_than_the_context():
    """SGLang refuses an input above min(context, KV pool) - 6 (Kimi-K3 on 2x8 H200: 1M context, a pool
    of about 587k tokens). The check reads the server's pool (GET /server_info) and sends 75% of that."""
    model = k3_like()
    pool = 16000
    url, stop = run_in_thread(_settings(model, profile=LatencyProfile(max_total_num_tokens=pool)))
    try:
        result = _run(url, _served(model), ["long_context"])["long_context"]
    finally:
        stop()
    assert result.status == "pass", result.reason
    assert result.details["longest_input"] == pool - 6 and "KV pool" in result.details["bounded_by"]
    assert result.details["target_prompt_tokens"] == int((pool - 6) * LONG_CONTEXT_FRACTION)


def test_long_context_falls_back_to_the_plans_pool_estimate():
    """A server that says nothing of its pool (another OpenAI-compatible server) leaves the plan's estimate."""
    from types import SimpleNamespace

    from kimi_runbooks.invoke.contracts import long_context_room
    from kimi_runbooks.target.served_limits import ServedLimits

    served = replace(_served(k3_like(), context=1_048_576), kv_pool_tokens=587_412)
    handle = SimpleNamespace(rehearsal=None, max_total_num_tokens=None)
    room = long_context_room(SimpleNamespace(served=served, handle=handle, limits=ServedLimits()))  # type: ignore[arg-type]
    assert room == (587_412 - 6, "the plan's KV pool estimate (kv_pool_tokens)")
    assert int(room[0] * LONG_CONTEXT_FRACTION) == 440_554  # not 786_432 (75% of the 1M context)


def test_a_server_that_ignores_reasoning_effort_fails():
    """--fault effort-ignored: every level is accepted but reasons at the model's default, so no level
    reasons longer than another; the check names the server, not noise."""
    from kimi_runbooks.emulator.settings import parse_fault

    model = k3_like()
    url, stop = run_in_thread(_settings(model, fault=parse_fault("effort-ignored")))
    try:
        result = _run(url, _served(model), ["reasoning_effort"])["reasoning_effort"]
    finally:
        stop()
    assert result.status == "fail" and "does not honour reasoning_effort" in result.reason
    samples = result.details["reasoning_token_samples_by_effort"]
    assert all(len(v) == len(EFFORT_PROMPTS) for v in samples.values())


def test_effort_rule_tolerates_a_close_swap_and_not_a_flat_server():
    """The statistic: medians of several samples; a swap within the tolerance passes (a real model's
    noise), a clear swap or a flat top-to-bottom fails."""
    levels = ["low", "high", "max"]
    assert effort_order_problems({"low": 1000, "high": 2600, "max": 2500}, levels) == []  # 4% swap: noise
    swapped = effort_order_problems({"low": 1000, "high": 2600, "max": 2000}, levels)
    assert len(swapped) == 1 and "'max' reasoned less" in swapped[0]
    flat = effort_order_problems({"low": 1000, "high": 1050, "max": 1100}, levels)
    assert len(flat) == 1 and "does not honour" in flat[0]
