"""An input the KV pool cannot hold whole is refused as SGLang 0.5.23's scheduler refuses it
(managers/utils.py validate_input_length, bounded by min(context, pool) - 6 in managers/tp_worker.py):
a 400 BadRequestError, or one error event when streamed; /server_info's max_req_input_len says the bound."""

from __future__ import annotations

import json

import httpx

from kimi_runbooks.emulator import EmulatorSettings, LatencyProfile
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.invoke.contracts import long_prompt

MODEL = "moonshotai/Kimi-K2.6"
POOL = 4000
CONTEXT = 32768


def _settings() -> EmulatorSettings:
    profile = LatencyProfile(max_total_num_tokens=POOL)
    return EmulatorSettings(time_scale=0.01, log_startup=False, model=MODEL, max_model_len=CONTEXT, profile=profile)


def _chat(prompt: str, stream: bool = False) -> dict:
    return {"model": MODEL, "messages": [{"role": "user", "content": prompt}], "max_tokens": 8, "stream": stream}


def test_an_input_above_the_kv_pool_is_refused_with_sglangs_message() -> None:
    with emulator_server(_settings()) as url:
        info = httpx.get(url + "/server_info").json()
        refused = httpx.post(url + "/v1/chat/completions", json=_chat(long_prompt(6000)), timeout=30)
        streamed = httpx.post(url + "/v1/chat/completions", json=_chat(long_prompt(6000), stream=True), timeout=30)
        fits = httpx.post(url + "/v1/chat/completions", json=_chat(long_prompt(2000)), timeout=30)
    assert info["max_total_num_tokens"] == POOL and info["max_req_input_len"] == POOL - 6
    assert refused.status_code == 400, refused.text
    error = refused.json()
    assert error["object"] == "error" and error["type"] == "BadRequestError" and error["code"] == 400
    message = error["message"]
    assert message.startswith("Input length (") and message.endswith(
        f"tokens) exceeds the maximum allowed length ({POOL - 6} tokens). "
        "Use a shorter input or enable --allow-auto-truncate."
    )
    assert streamed.status_code == 200
    first = json.loads(streamed.text.split("\n\n")[0].removeprefix("data: "))
    assert first["error"]["message"] == message and first["error"]["type"] == "BAD_REQUEST"
    assert fits.status_code == 200, fits.text
