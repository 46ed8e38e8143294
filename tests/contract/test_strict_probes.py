"""The invoke probes against an emulator in strict-sglang mode: no emulated marker anywhere.

Issue 12, item 3: the stages must not lean on anything only the emulator does. With
``strict_sglang=True`` the emulator drops its allowed deviations (no X-Emulated header, no
``emulated`` in /server_info, no sglang:is_emulated metric), so the probes cannot tell it
from SGLang and must treat it as a real server. Every protocol-level check still passes;
the one content judgement the emulator cannot meet (reading the receipt in the image) is
now judged, as it would be on real hardware, and fails with a reason instead of skipping.
"""

from __future__ import annotations

import httpx
import pytest

from kimi_runbooks import invoke
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.invoke.image import RECEIPT_ITEM
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.target.locate import RunHandle

CONTENT_ONLY = {"image_content"}  # needs a model that reads images
NEEDS_INTERNET = {"image_url"}  # skips without an image_url on any server


@pytest.fixture(scope="module")
def strict_url():
    settings = EmulatorSettings(time_scale=0.01, log_startup=False, seed=5, strict_sglang=True)
    with emulator_server(settings) as url:
        yield url


def test_strict_emulator_shows_no_marker(strict_url: str) -> None:
    with httpx.Client(base_url=strict_url) as http:
        response = http.get("/server_info")
        assert "x-emulated" not in response.headers
        assert "emulated" not in response.json()
        assert not response.json()["version"].endswith("emulated")
        assert "is_emulated" not in http.get("/metrics").text


def test_invoke_probes_behave_against_a_server_that_looks_like_sglang(
    strict_url: str, tmp_path, require_tool_env
) -> None:
    # the run's tokenizer (as a runbook with model_path has one): kvv_prompt_tokens counts the
    # expected prompt tokens with it in the bench env, as it would with a real model's (so without
    # that env the probe fails, rightly: the test skips on a machine without it, never in CI)
    require_tool_env("bench")
    tokenizer = make_offline_tokenizer(tmp_path / "tokenizer")
    handle = RunHandle(base_url=strict_url, model="moonshotai/Kimi-K2.6", launcher="external", tokenizer=str(tokenizer))
    results = invoke.run_all(
        handle, invoke.InvokeOptions(timeout=60.0, max_tokens_thinking=4096, concurrency=3, parallel=1)
    )
    by_name = {r.name: r for r in results}
    assert set(invoke.CHECKS) <= set(by_name)
    assert not any(r.emulated for r in results)  # nothing told the probes it is an emulator
    for name, result in by_name.items():
        if name in CONTENT_ONLY | NEEDS_INTERNET:
            continue
        assert result.status == "pass", (name, result.reason)
    assert by_name["image_url"].status == "skip"
    image = by_name["image_content"]
    assert image.status == "fail" and RECEIPT_ITEM in image.reason, image.reason
    assert "counted by the run's tokenizer" in by_name["kvv_prompt_tokens"].reason
