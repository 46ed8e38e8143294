"""Contract: the emulator's PD prefill and decode roles against SGLang 0.5.23's own classes (issue 28 item 3).

A prefill and a decode emulator answer the bodies sglang-router 0.3.2 sends a PD pair (the request with
bootstrap_host / bootstrap_port / bootstrap_room injected, the same three to both: read off the router
with a logging proxy in front of each server); what they answered and the constants they use are
captured here and tests/contract/pd_check.py, run by the bench tool env's python, judges them with
SGLang's GenerateReqInput, ChatCompletionRequest, CompletionRequest, FINISH_LENGTH, the disagg
defaults and the scheduler's and decode's messages.

Heavy: needs the bench tool env. Skipped without it; with CI=true a missing env is a failure.
"""

from __future__ import annotations

import json

import httpx
import pytest

from conftest import explain, run_in_bench_env
from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.disagg import DEFAULT_BOOTSTRAP_PORT, FAKE_BOOTSTRAP_HOST, Disaggregation
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.target.ports import free_port

pytestmark = pytest.mark.heavy
MODEL = "moonshotai/Kimi-K2.6"


def _settings(mode: str, **launch: object) -> EmulatorSettings:
    return EmulatorSettings(
        port=0, time_scale=0.01, log_startup=False, launch_args={"disaggregation_mode": mode, **launch}
    )


def test_pd_roles_answer_as_sglang_does(require_tool_env, tmp_path, monkeypatch):
    bench = require_tool_env("bench")
    port = free_port("127.0.0.1")
    pd = {"bootstrap_host": "127.0.0.1", "bootstrap_port": port}
    bodies = [
        {
            "route": "/generate",
            "body": {"text": "hello", "sampling_params": {"max_new_tokens": 3}, **pd, "bootstrap_room": 11},
        },
        {
            "route": "/v1/chat/completions",
            "body": {
                "model": MODEL,
                "messages": [{"role": "user", "content": "hi"}],
                "max_completion_tokens": 4,
                **pd,
                "bootstrap_room": 12,
            },
        },
        {
            "route": "/v1/completions",
            "body": {"model": MODEL, "prompt": "hello", "max_tokens": 3, **pd, "bootstrap_room": 13},
        },
    ]
    monkeypatch.setenv("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "0.3")
    with emulator_server(_settings("prefill", disaggregation_bootstrap_port=port)) as prefill:
        with emulator_server(_settings("decode")) as decode:
            for sent in bodies:
                assert httpx.post(prefill + sent["route"], json=sent["body"], timeout=30).status_code == 200
                assert httpx.post(decode + sent["route"], json=sent["body"], timeout=30).status_code == 200
            first = httpx.post(prefill + "/generate", json={**bodies[0]["body"], "bootstrap_room": 14}).json()
            refused = httpx.post(prefill + "/generate", json={"text": "hi"}).json()
            failed = httpx.post(
                decode + "/v1/completions", json={**bodies[2]["body"], "bootstrap_room": 99}, timeout=30
            )
    monkeypatch.delenv("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT")
    captured = {
        "router_bodies": bodies,
        "prefill_finish_reason": first["meta_info"]["finish_reason"],
        "fake_bootstrap_host": FAKE_BOOTSTRAP_HOST,
        "default_bootstrap_port": DEFAULT_BOOTSTRAP_PORT,
        "default_timeout_s": Disaggregation("null", None, 1.0).timeout_s,
        "missing_room_message": refused["error"]["message"],
        "handshake_message": failed.json()["message"],
    }
    path = tmp_path / "captured.json"
    path.write_text(json.dumps(captured))
    report = run_in_bench_env(str(bench.python), "pd_check.py", path, report=tmp_path / "report.json")
    assert not report["mismatches"], explain(report)
