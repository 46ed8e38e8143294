"""The emulator's prefix cache (issue 28 item 1): radix matching, reports, skipped prefill, eviction.

The rules are SGLang 0.5.23's (mem_cache/radix_cache.py, managers/schedule_batch.py,
entrypoints/openai/usage_processor.py, serving_chat.py); tests/contract/test_prefix_cache_contract.py
holds the reported shapes to SGLang's own protocol classes and metric collectors.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.latency import LatencyProfile
from kimi_runbooks.emulator.radix import PrefixCache
from kimi_runbooks.emulator.testing import emulator_server

from .test_emulator import parse_metrics

FAST = LatencyProfile(ttft_base_ms=1.0, ttft_per_1k_input_ms=1.0, itl_base_ms=0.5, itl_per_running_ms=0.0)

# ---------------------------------------------------------------- the tree


def test_match_is_the_longest_cached_prefix_and_splits_nodes() -> None:
    cache = PrefixCache()
    cache.insert([1, 2, 3, 4, 5])
    assert cache.match([1, 2, 3, 9])[0] == 3
    assert cache.match([7])[0] == 0
    cache.insert([1, 2, 3, 8, 8])  # shares 3 with the first: only the tail is new
    assert cache.held == 7
    assert cache.match([1, 2, 3, 8, 8, 8])[0] == 5
    assert cache.match([1, 2, 3, 4, 5])[0] == 5


def test_matches_are_whole_pages() -> None:
    cache = PrefixCache(page_size=4)
    added, _ = cache.insert(list(range(10)))
    assert added == 8  # the partial page is not kept
    assert cache.match(list(range(7)) + [99])[0] == 4
    assert cache.match(list(range(10)))[0] == 8


def test_disabled_cache_keeps_nothing() -> None:
    cache = PrefixCache(disabled=True)
    cache.insert([1, 2, 3])
    assert cache.held == 0 and cache.match([1, 2, 3])[0] == 0


def test_eviction_is_lru_and_spares_locked_paths() -> None:
    cache = PrefixCache()
    cache.insert([1] * 10)
    cache.insert([2] * 10)
    cache.insert([3] * 10)
    cache.match([1] * 10)  # looked up: now the most recent
    _, locked = cache.match([2] * 10)
    cache.lock(locked)
    assert cache.protected == 10 and cache.evictable == 20
    assert cache.evict(5) == 10  # whole leaves: the least recently used unlocked one, [3]*10
    assert cache.match([3] * 10)[0] == 0 and cache.match([1] * 10)[0] == 10
    assert cache.evict(100) == 10  # [1]*10 goes; the locked [2]*10 stays
    assert cache.match([2] * 10)[0] == 10
    cache.unlock(locked)
    assert cache.evict(100) == 10 and cache.held == 0


# ---------------------------------------------------------------- over HTTP

CONVERSATION = [
    {"role": "system", "content": "You are a coding agent. " * 80},
    {"role": "user", "content": "List the files in the repository and explain the layout."},
]


def _chat(url: str, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    body = {"model": "m", "messages": messages, "max_tokens": 12, **extra}
    response = httpx.post(url + "/v1/chat/completions", json=body, timeout=30)
    response.raise_for_status()
    return response.json()  # type: ignore[no-any-return]


def _generate(url: str, ids: list[int], new: int = 4) -> dict[str, Any]:
    body = {"input_ids": ids, "sampling_params": {"max_new_tokens": new, "ignore_eos": True}}
    response = httpx.post(url + "/generate", json=body, timeout=30)
    response.raise_for_status()
    return response.json()["meta_info"]  # type: ignore[no-any-return]


def test_cache_report_needs_the_flag_and_counts_the_shared_prefix() -> None:
    report = EmulatorSettings(profile=FAST, launch_args={"enable_cache_report": True}, log_startup=False)
    with emulator_server(report) as url:
        first = _chat(url, CONVERSATION)
        assert first["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}
        again = _chat(url, CONVERSATION)
        prompt = again["usage"]["prompt_tokens"]
        assert again["usage"]["prompt_tokens_details"] == {"cached_tokens": prompt - 1}  # the last token is computed
        # the next turn: the earlier prompt (and as much of the reply as re-renders the same) is cached
        turn2 = [*CONVERSATION, first["choices"][0]["message"], {"role": "user", "content": "Now run the tests."}]
        nxt = _chat(url, turn2, return_cached_tokens_details=True)
        cached = nxt["usage"]["prompt_tokens_details"]["cached_tokens"]
        assert prompt - 1 <= cached < nxt["usage"]["prompt_tokens"]
        assert nxt["sglext"] == {"cached_tokens_details": {"device": cached, "host": 0}}
    with emulator_server(EmulatorSettings(profile=FAST, log_startup=False)) as url:
        _chat(url, CONVERSATION)
        plain = _chat(url, CONVERSATION)
        assert plain["usage"]["prompt_tokens_details"] is None  # no --enable-cache-report
        assert "sglext" not in plain


def test_streamed_chat_sends_the_cache_details_before_usage() -> None:
    settings = EmulatorSettings(profile=FAST, launch_args={"enable_cache_report": True}, log_startup=False)
    with emulator_server(settings) as url:
        _chat(url, CONVERSATION)
        body = {
            "model": "m",
            "messages": CONVERSATION,
            "max_tokens": 8,
            "stream": True,
            "stream_options": {"include_usage": True},
            "return_cached_tokens_details": True,
        }
        with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=30) as response:
            import json

            chunks = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
    ext, usage = chunks[-2], chunks[-1]
    cached = usage["usage"]["prompt_tokens_details"]["cached_tokens"]
    assert cached > 0 and ext["choices"] == [] and ext["usage"] is None
    assert ext["sglext"] == {"cached_tokens_details": {"device": cached, "host": 0}}


def test_generate_reports_cached_tokens_and_disable_radix_cache_turns_it_off() -> None:
    ids = list(range(100, 400))
    with emulator_server(EmulatorSettings(profile=FAST, log_startup=False)) as url:
        assert _generate(url, ids)["cached_tokens"] == 0
        meta = _generate(url, ids + [7, 8])
        assert meta["cached_tokens"] == len(ids)
        assert meta["cached_tokens_details"] == {"device": len(ids), "host": 0}
        assert httpx.post(url + "/flush_cache", timeout=10).status_code == 200
        assert _generate(url, ids)["cached_tokens"] == 0  # the flush emptied the tree
    off = EmulatorSettings(profile=FAST, launch_args={"disable_radix_cache": True}, log_startup=False)
    with emulator_server(off) as url:
        _generate(url, ids)
        meta = _generate(url, ids)
        # null when nothing was cached, as a live SGLang 0.5.23 sends it (test_live_differential.py)
        assert meta["cached_tokens"] == 0 and meta["cached_tokens_details"] is None


def test_page_size_from_the_attention_backend() -> None:
    assert EmulatorSettings(launch_args={"attention_backend": "flashmla"}).page_size == 64
    assert EmulatorSettings(launch_args={"attention_backend": "flashinfer"}).page_size == 1
    assert EmulatorSettings(launch_args={"page_size": 16}).page_size == 16
    with emulator_server(EmulatorSettings(profile=FAST, launch_args={"page_size": 64}, log_startup=False)) as url:
        ids = list(range(1000, 1200))
        _generate(url, ids)
        assert _generate(url, ids)["cached_tokens"] == 192  # 199 matchable, rounded down to pages of 64


def test_cached_prefix_skips_prefill_time() -> None:
    """Miss: 4000 tokens at 0.25 ms each = 1 s of prefill; hit: one new token."""
    profile = LatencyProfile(ttft_base_ms=5.0, ttft_per_1k_input_ms=250.0, itl_base_ms=1.0, itl_per_running_ms=0.0)
    ids = list(range(5000, 9000))
    with emulator_server(EmulatorSettings(profile=profile, log_startup=False)) as url:
        _generate(url, [1, 2, 3])  # warm-up
        t = time.perf_counter()
        _generate(url, ids, new=1)
        miss = time.perf_counter() - t
        t = time.perf_counter()
        meta = _generate(url, ids, new=1)
        hit = time.perf_counter() - t
    assert meta["cached_tokens"] == len(ids) - 1
    assert miss >= 0.95  # the prefill is slept in full
    assert hit < miss / 2  # and skipped when cached (a ratio: a slow machine slows both)


def test_kv_pressure_evicts_least_recently_used_prefixes() -> None:
    profile = LatencyProfile(ttft_base_ms=1.0, ttft_per_1k_input_ms=1.0, itl_base_ms=0.5, max_total_num_tokens=1000)
    a, b, c = list(range(10, 410)), list(range(1000, 1400)), list(range(2000, 2400))
    with emulator_server(EmulatorSettings(profile=profile, log_startup=False)) as url:
        _generate(url, a)
        _generate(url, b)  # the tree holds a and b (808 of 1000 tokens)
        assert _generate(url, a)["cached_tokens"] > 0  # a is now the most recently used
        _generate(url, c)  # needs 404: b, the least recently used, is evicted
        assert _generate(url, b)["cached_tokens"] == 0
        metrics = parse_metrics(httpx.get(url + "/metrics", timeout=10).text)
    assert metrics["sglang:num_used_tokens"] == 0  # nothing runs: cached tokens are evictable, not used


def test_cache_metrics_follow_sglang() -> None:
    ids = list(range(300, 700))
    with emulator_server(EmulatorSettings(profile=FAST, log_startup=False)) as url:
        _generate(url, ids)
        _generate(url, ids + [1] * 100)
        text = httpx.get(url + "/metrics", timeout=10).text
    metrics = parse_metrics(text)
    assert metrics["sglang:cache_hit_rate"] == pytest.approx(400 / 500)  # the last prefill's hit rate
    assert 'sglang:cached_tokens_total{cache_source="device"' in text
    assert metrics["sglang:cached_tokens_total"] == 400
    assert 'mode="device_hit"} 400.0' in text and 'mode="input"} 500.0' in text  # 400 + 100 computed


@pytest.mark.parametrize(("input_len", "hit"), [(8000, 0.5), (10000, 0.9), (30000, 0.97), (100000, 0.9)])
def test_profile_prefill_after_a_prefix_is_the_prediction(input_len: int, hit: float) -> None:
    """The emulator sleeps what the performance model predicts for prefix= (sampled on a grid and
    interpolated; benchmarks/prefix_cache_vs_model.py measures it over HTTP)."""
    from kimi_runbooks.catalog import load_catalog
    from kimi_runbooks.emulator.profile import latency_profile
    from kimi_runbooks.perfmodel import Predictor
    from kimi_runbooks.plan import plan

    launch = plan({"platform": "h200"}, load_catalog())
    predictor = Predictor(launch)
    profile = latency_profile(launch, predictor)
    cached = int(input_len * hit)
    predicted = predictor.prefill_seconds(predictor.serving.prefill_pool, input_len, cached / input_len) * 1000
    assert profile.prefill_ms(input_len, cached) == pytest.approx(predicted, rel=0.05)
    assert profile.prefill_ms(input_len, cached) < profile.prefill_ms(input_len, 0)


def test_flush_cache_waits_for_idle_as_sglang_does_with_a_timeout() -> None:
    """SGLang 0.5.23's /flush_cache takes `timeout` (bench_serving --flush-cache sends 60): a busy
    engine is flushed once idle, not refused; without a timeout it is refused (http_server.py,
    scheduler_components/flush_wrapper.py); a negative timeout is FastAPI's 422."""
    import threading

    slow = LatencyProfile(ttft_base_ms=1.0, ttft_per_1k_input_ms=0.0, itl_base_ms=20.0, itl_per_running_ms=0.0)
    ids = list(range(500, 700))
    with emulator_server(EmulatorSettings(profile=slow, log_startup=False)) as url:
        _generate(url, ids)
        running = threading.Thread(target=_generate, args=(url, [1, 2, 3], 40))  # ~0.8 s of decoding
        running.start()
        time.sleep(0.2)
        refused = httpx.post(url + "/flush_cache", timeout=10)
        assert (refused.status_code, refused.text) == (400, "Flush cache failed.\n")
        waited = httpx.post(url + "/flush_cache", params={"timeout": 30}, timeout=40)
        assert waited.status_code == 200 and waited.text.startswith("Cache flushed.")
        running.join()
        assert _generate(url, ids)["cached_tokens"] == 0  # flushed once the running request finished
        bad = httpx.post(url + "/flush_cache", params={"timeout": -1}, timeout=10)
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "timeout"]
