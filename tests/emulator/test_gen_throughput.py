"""sglang:gen_throughput as SGLang computes it (issue 25 item 10).

SGLang's MetricsReporter.report_decode_stats (srt/managers/scheduler_components/metrics_reporter.py)
divides the tokens the whole batch decoded since the last decode-stats tick by the time since it,
every --decode-log-interval (40) decode iterations; the emulator printed the last finished request's
own decode rate, so at c16 a scraper read ~1/16 of what the server decoded.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from kimi_runbooks.emulator.prometheus import DECODE_LOG_INTERVAL, DecodeStats, Metrics
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.speed.server_metrics import parse_metrics


def test_a_tick_divides_the_batchs_tokens_by_the_time_since_the_last_tick() -> None:
    stats = DecodeStats(last_tick=100.0)
    itl = 1 / 11.5  # each of 16 requests decodes 11.5 tok/s: the batch decodes 184 tok/s
    now = 100.0
    for step in range(DECODE_LOG_INTERVAL):
        now = 100.0 + (step + 1) * itl
        for _ in range(16):
            stats.decoded(16, now)
    assert stats.value == pytest.approx(16 * 11.5)  # one tick after 40 iterations of the batch
    assert stats.tokens == 0 and stats.last_tick == now
    stats.decoded(16, now + 1)  # between ticks the value is held
    assert stats.value == pytest.approx(184.0)
    assert stats.current(now + 29) == pytest.approx(184.0)
    assert stats.current(now + 31) == 0.0  # GEN_THROUGHPUT_STALENESS_SECONDS


def test_the_exported_gauge_reads_zero_once_nothing_runs() -> None:
    metrics = Metrics(model_name="m")
    metrics.decode.value = 184.0
    assert metrics.gen_throughput(running=3) == 184.0
    assert metrics.gen_throughput(running=0) == 0.0  # SGLang's idle report publishes 0
    assert metrics.last_gen_throughput == 184.0  # /server_info keeps the reporter's value


@pytest.mark.slow  # 16 requests at time scale 1 in real time: ~20 s; make test-all and CI run it
def test_at_c16_the_gauge_is_the_batchs_decode_rate_not_one_requests() -> None:
    body = {"input_ids": list(range(1, 65)), "sampling_params": {"max_new_tokens": 160, "ignore_eos": True}}
    readings: list[tuple[float, float, float]] = []  # (t, gen_throughput, generation tokens so far)
    # its own process, so the emulator keeps its token schedule on a loaded machine
    with start_subprocess(["--profile", "h200", "--time-scale", "1", "--enable-metrics"]) as emu:
        url = emu.base_url
        with httpx.Client(timeout=60) as client, ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(httpx.post, url + "/generate", json=body, timeout=60) for _ in range(16)]
            while not all(f.done() for f in futures):
                text = client.get(url + "/metrics").text
                total = sum(
                    float(line.rsplit(" ", 1)[1])
                    for line in text.splitlines()
                    if line.startswith("sglang:generation_tokens_total")
                )
                values = parse_metrics(text)
                if values.get("num_running_reqs") == 16:
                    readings.append((time.monotonic(), values["gen_throughput"], total))
                time.sleep(0.1)
            assert all(f.result().status_code == 200 for f in futures)
    ticks = []  # each tick's value, in order (a value is held until the next tick)
    for _, gauge, _ in readings:
        if gauge > 0 and (not ticks or gauge != ticks[-1]):
            ticks.append(gauge)
    # the first tick's window starts when the server did (SGLang's last_decode_stats_tic is set at
    # start-up), so it holds idle time, as on SGLang; the later ones hold only decoding
    assert len(ticks) >= 2, readings
    running = [r for r in readings if r[1] > 0]
    (t0, _, n0), (t1, _, n1) = running[0], running[-1]
    decoded = (n1 - n0) / (t1 - t0)  # what the batch decoded meanwhile, from SGLang's counter
    for gauge in ticks[1:]:
        assert gauge == pytest.approx(decoded, rel=0.35), (ticks, decoded)
