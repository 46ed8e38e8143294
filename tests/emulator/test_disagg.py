"""The emulator as SGLang 0.5.23's PD prefill and decode servers answer sglang-router (emulator/disagg.py).

Requests carry what the router injects (bootstrap_host / bootstrap_port / bootstrap_room, the same
three to both servers of a pair); the prefill answers one token with finish_reason length 0 and
marks the room's KV sent on its bootstrap port; the decode waits for that room, then decodes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.disagg import FAKE_BOOTSTRAP_HOST, KV_ROUTE
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.target.ports import free_port

MODEL = "moonshotai/Kimi-K2.6"


def _settings(mode: str, **launch: Any) -> EmulatorSettings:
    return EmulatorSettings(
        port=0, time_scale=0.01, log_startup=False, launch_args={"disaggregation_mode": mode, **launch}
    )


def _pd(room: int, port: int) -> dict[str, Any]:
    return {"bootstrap_host": "127.0.0.1", "bootstrap_port": port, "bootstrap_room": room}


@pytest.fixture
def prefill():
    port = free_port("127.0.0.1")
    with emulator_server(_settings("prefill", disaggregation_bootstrap_port=port)) as url:
        yield url, port


def test_both_roles_refuse_a_request_without_a_bootstrap_room(prefill):
    url, _ = prefill
    answer = httpx.post(f"{url}/generate", json={"text": "hello", "sampling_params": {"max_new_tokens": 4}})
    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith(
        "Invalid request: Disaggregated request received without bootstrap room id."
    )
    chat = httpx.post(
        f"{url}/v1/chat/completions", json={"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert chat.status_code == 400 and "bootstrap room id" in chat.json()["message"]
    with emulator_server(_settings("decode")) as decode:
        assert httpx.post(f"{decode}/v1/completions", json={"model": MODEL, "prompt": "hi"}).status_code == 400


def test_the_fake_bootstrap_host_of_sglangs_health_check_passes_without_a_room(prefill):
    url, _ = prefill
    body = {"input_ids": [0], "sampling_params": {"max_new_tokens": 1}, "bootstrap_host": FAKE_BOOTSTRAP_HOST}
    assert httpx.post(f"{url}/generate", json=body).status_code == 200


def test_prefill_answers_one_token_with_finish_length_0_and_marks_the_room_sent(prefill):
    url, port = prefill
    assert httpx.get(f"http://127.0.0.1:{port}/health").text == "OK"
    assert httpx.get(f"http://127.0.0.1:{port}{KV_ROUTE}7").status_code == 404
    body = {"text": "hello there", "sampling_params": {"max_new_tokens": 50}, **_pd(7, port)}
    answer = httpx.post(f"{url}/generate", json=body).json()
    assert answer["meta_info"]["finish_reason"] == {"type": "length", "length": 0}
    assert answer["meta_info"]["completion_tokens"] == 1 and len(answer["output_ids"]) == 1
    assert httpx.get(f"http://127.0.0.1:{port}{KV_ROUTE}7").status_code == 200
    chat = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, **_pd(8, port)}
    reply = httpx.post(f"{url}/v1/chat/completions", json=chat).json()
    assert reply["usage"]["completion_tokens"] == 1 and reply["choices"][0]["finish_reason"] == "length"


def test_decode_waits_for_the_prefills_kv_then_decodes_the_whole_reply(prefill):
    url, port = prefill
    body = {"text": "hello there", "sampling_params": {"max_new_tokens": 12, "ignore_eos": True}, **_pd(21, port)}

    async def pair(decode: str) -> tuple[httpx.Response, httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            d = asyncio.create_task(client.post(f"{decode}/generate", json=body))
            await asyncio.sleep(0.3)
            assert not d.done()  # the decode holds the request until the prefill has sent the room
            p = await client.post(f"{url}/generate", json=body)
            return p, await d

    with emulator_server(_settings("decode")) as decode:
        p, d = asyncio.run(pair(decode))
    assert p.json()["meta_info"]["completion_tokens"] == 1
    assert d.status_code == 200 and d.json()["meta_info"]["completion_tokens"] == 12


def test_decode_aborts_with_sglangs_handshake_error_when_the_kv_never_arrives(monkeypatch, prefill):
    _, port = prefill
    monkeypatch.setenv("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "0.5")
    with emulator_server(_settings("decode")) as decode:
        body = {"model": MODEL, "prompt": "hi", "max_tokens": 4, **_pd(99, port)}
        answer = httpx.post(f"{decode}/v1/completions", json=body, timeout=30)
    assert answer.status_code == 500
    assert answer.json()["message"].startswith("Decode handshake failed for request rank=0")


def test_an_unknown_mode_is_refused():
    from kimi_runbooks.emulator.disagg import Disaggregation

    with pytest.raises(ValueError, match="--disaggregation-mode must be one of"):
        Disaggregation("both", None, 1.0)
