"""A request may ask the emulator to run its own emulated time faster (emulator/fast_forward.py):
the invoke stage's long_context check needs a prompt the model says takes long to prefill, not the wait."""

from __future__ import annotations

import time

import httpx

from kimi_runbooks.emulator import EmulatorSettings, LatencyProfile
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.target.emulated_time import FAST_FORWARD_HEADER

PROFILE = LatencyProfile(ttft_base_ms=2000, ttft_per_1k_input_ms=0, itl_base_ms=10, itl_per_running_ms=0)
BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


def _timed(http: httpx.Client, url: str, headers: dict[str, str]) -> tuple[float, httpx.Response]:
    start = time.perf_counter()
    response = http.post(url + "/v1/chat/completions", json=BODY, headers=headers)
    return time.perf_counter() - start, response


def test_a_fast_forwarded_request_sleeps_its_prefill_faster_and_others_do_not():
    with emulator_server(EmulatorSettings(profile=PROFILE, time_scale=0.5, log_startup=False)) as url:
        with httpx.Client(timeout=30) as http:
            plain, first = _timed(http, url, {})
            fast, second = _timed(http, url, {FAST_FORWARD_HEADER: "20"})
            refused = http.post(url + "/v1/chat/completions", json=BODY, headers={FAST_FORWARD_HEADER: "0.5"})
    assert first.status_code == second.status_code == 200
    assert second.json()["usage"] == first.json()["usage"]  # the same request, only its clock faster
    assert plain >= 1.0  # 2 s of modelled prefill x time scale 0.5
    assert fast < 0.5  # 1/20 of that
    assert refused.status_code == 400
    assert FAST_FORWARD_HEADER in refused.json()["message"] and "Fix:" in refused.json()["message"]
