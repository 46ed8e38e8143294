"""Prefill first: prefills queue behind each other and decode waits for them, as in SGLang and
as the performance model predicts (perfmodel.queueing.synchronized_waves)."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx
import pytest

from kimi_runbooks.emulator import EmulatorSettings, LatencyProfile
from kimi_runbooks.emulator.prefill import PrefillLanes
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.perfmodel.queueing import Timing, synchronized_waves


def test_one_lane_queues_prefills_and_decode_waits_for_them():
    lanes = PrefillLanes()
    assert [lanes.book(0.0, 0.1) for _ in range(3)] == pytest.approx([0.1, 0.2, 0.3])
    assert lanes.book(1.0, 0.1) == pytest.approx(1.1)  # an idle lane starts at once
    # a decode step ready at 0.1 needs 10 ms of time with no prefill: after the queued ones
    assert lanes.decode_due(0.1, 0.01) == pytest.approx(0.31)
    # between prefills it fits in the gap, or runs across it
    assert lanes.decode_due(0.5, 0.01) == pytest.approx(0.51)
    assert lanes.decode_due(0.95, 0.1) == pytest.approx(1.15)  # 50 ms before, 50 ms after the 1.0-1.1 prefill


def test_lanes_prefill_side_by_side_and_a_pd_decode_pool_never_waits():
    two = PrefillLanes(lanes=2)
    assert [two.book(0.0, 0.1) for _ in range(4)] == pytest.approx([0.1, 0.1, 0.2, 0.2])
    assert two.decode_due(0.0, 0.01) == pytest.approx(0.21)  # ranks step together: any lane busy stalls
    pd = PrefillLanes(stalls_decode=False)
    pd.book(0.0, 5.0)
    assert pd.decode_due(0.0, 0.01) == pytest.approx(0.01)


async def _burst(url: str, n: int, output_len: int) -> list[list[float]]:
    """n streamed /generate requests sent at once; each one's token times from the send."""

    async def one(http: httpx.AsyncClient) -> list[float]:
        payload = {
            "input_ids": [7] * 8,
            "stream": True,
            "sampling_params": {"max_new_tokens": output_len, "ignore_eos": True},
        }
        start, stamps = time.perf_counter(), []
        async with http.stream("POST", url + "/generate", json=payload) as r:
            async for line in r.aiter_lines():
                if line.startswith("data:") and "[DONE]" not in line:
                    stamps.append(time.perf_counter() - start)
        return stamps

    async with httpx.AsyncClient(timeout=30) as http:
        await one(http)  # warm the connection pool
        return await asyncio.gather(*(one(http) for _ in range(n)))


def test_a_burst_of_equal_requests_is_one_wave_as_predicted():
    profile = LatencyProfile(ttft_base_ms=100, ttft_per_1k_input_ms=0, itl_base_ms=10, itl_per_running_ms=0)
    with emulator_server(EmulatorSettings(profile=profile, time_scale=1.0, log_startup=False)) as url:
        streams = asyncio.run(_burst(url, 4, 5))
    firsts = sorted(s[0] for s in streams)
    assert firsts == pytest.approx([0.1, 0.2, 0.3, 0.4], abs=0.06)  # each waits for the prefills ahead
    early = min(streams, key=lambda s: s[0])
    assert early[1] - early[0] == pytest.approx(0.3 + 0.01, abs=0.06)  # then for the later prefills
    wave = synchronized_waves(
        Timing(0.1, lambda b: 0.01, lambda b: 0.01, transfer=0.0, capacity=100, disaggregated=False), 4, 5
    )
    assert statistics.median(firsts) == pytest.approx(wave.ttft_s, rel=0.2)


def test_the_engine_tells_the_itl_lookup_how_much_context_is_held():
    """A profile with a context term: a request decoding after a long prompt is slower than after
    a short one, because the engine passes the KV the running requests hold."""
    profile = LatencyProfile(
        ttft_base_ms=1, ttft_per_1k_input_ms=0, itl_base_ms=5, itl_per_running_ms=0, itl_per_1k_context_ms=5
    )

    async def gaps(url: str, prompt: int) -> float:
        payload = {
            "input_ids": [7] * prompt,
            "stream": True,
            "sampling_params": {"max_new_tokens": 6, "ignore_eos": True},
        }
        stamps = []
        async with httpx.AsyncClient(timeout=30) as http:
            async with http.stream("POST", url + "/generate", json=payload) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data:") and "[DONE]" not in line:
                        stamps.append(time.perf_counter())
        return statistics.median(b - a for a, b in zip(stamps, stamps[1:]))

    with emulator_server(EmulatorSettings(profile=profile, time_scale=1.0, log_startup=False)) as url:
        short = asyncio.run(gaps(url, 10))
        long = asyncio.run(gaps(url, 8000))
    assert short == pytest.approx(0.005, abs=0.004)
    assert long == pytest.approx(0.005 + 0.040, abs=0.01)  # 8K context x 5 ms per 1K
