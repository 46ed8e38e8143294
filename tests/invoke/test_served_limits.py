"""Requests sized from what the server says it serves (issue 40 item 8): its context (GET /v1/models
max_model_len) bounds max_tokens, and a model the server says takes no images gets no image request."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import pytest

from kimi_runbooks import invoke
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.capabilities import ModelCapabilities
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.target.locate import RunHandle
from kimi_runbooks.target.served_limits import REHEARSAL_COMPLETION_TOKENS, ServedLimits, read_served_limits

MODEL = "moonshotai/Kimi-K2.6"
SMALL = 4096


@pytest.fixture(scope="module")
def small_text_server() -> Iterator[str]:
    """An emulator serving a 4096-token context and no image input (as a CPU rehearsal's SGLang does)."""
    settings = EmulatorSettings(time_scale=0.01, log_startup=False, model=MODEL, max_model_len=SMALL)
    settings = replace(settings, capabilities=replace(ModelCapabilities(), images=False))
    url, stop = run_in_thread(settings)
    yield url
    stop()


def test_limits_are_read_from_models_and_model_info(small_text_server):
    limits = read_served_limits(small_text_server, MODEL)
    assert limits.max_model_len == SMALL and limits.images is False
    assert any("/v1/models" in s for s in limits.sources) and any("/model_info" in s for s in limits.sources)
    assert read_served_limits(small_text_server, "another-model").max_model_len is None  # per model, never guessed


def test_a_server_that_says_nothing_leaves_the_plans_values():
    assert read_served_limits("http://127.0.0.1:9", MODEL, timeout=0.5) == ServedLimits()
    assert ServedLimits().completion_budget(8192) == 8192
    assert ServedLimits(max_model_len=SMALL).completion_budget(8192) == SMALL // 2
    assert ServedLimits(max_model_len=SMALL).completion_budget(100) == 100


def test_checks_fit_a_small_context(small_text_server):
    handle = RunHandle(base_url=small_text_server, model=MODEL, launcher="external")
    chat = invoke.run_all(handle, invoke.InvokeOptions(checks=["chat"], timeout=60))[0]
    assert chat.status == "pass", chat.reason
    assert chat.transcript[0]["request"]["max_tokens"] == SMALL // 2  # 8192 asked for, the server holds 4096


def test_a_rehearsal_sends_a_small_budget_and_skips_images(small_text_server):
    handle = RunHandle(base_url=small_text_server, model=MODEL, launcher="sglang-cpu", rehearsal="REAL SGLANG")
    results = {
        r.name: r
        for r in invoke.run_all(handle, invoke.InvokeOptions(checks=["chat", "image", "image_tools"], timeout=60))
    }
    chat = results["chat"]
    assert chat.status == "pass", chat.reason
    assert chat.transcript[0]["request"]["max_tokens"] == REHEARSAL_COMPLETION_TOKENS
    assert chat.rehearsal and "REAL SGLANG, TINY MODEL" in invoke.summary_table([chat])["source"].iloc[0]
    for name in ("image", "image_tools"):
        assert results[name].status == "skip" and "no vision tower" in results[name].reason
        assert not results[name].transcript  # nothing was sent


def test_a_real_deployment_that_lost_its_images_fails_saying_so(small_text_server):
    handle = RunHandle(base_url=small_text_server, model=MODEL, launcher="external")
    result = invoke.run_all(handle, invoke.InvokeOptions(checks=["image"], timeout=60))[0]
    assert result.status == "fail"
    assert "takes no image input" in result.reason and "has_image_understanding false" in result.reason
