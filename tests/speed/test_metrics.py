"""The /metrics sampler: SGLang's exposition parsed with prometheus_client, summarised per scenario,
and a clear note (never a crash) for a server without /metrics or with garbage there."""

from __future__ import annotations

import time

import httpx
import pytest

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.speed import server_metrics as metrics
from tests.support import FIXTURES


def test_parse_sums_counts_across_dp_ranks_and_keeps_peak_fractions() -> None:
    """DP attention prints one series per dp_rank: requests and tokens add up, usage is the worst rank."""
    values = metrics.parse_metrics((FIXTURES / "sglang_metrics_dp2.txt").read_text())
    assert values["num_running_reqs"] == 41
    assert values["num_queue_reqs"] == 23
    assert values["num_used_tokens"] == 190560 + 178400
    assert values["max_total_num_tokens"] == 2 * 196448
    assert values["token_usage"] == 0.97
    assert values["cache_hit_rate"] == 0.31
    assert values["time_to_first_token_seconds_sum"] == 23.65
    assert "prompt_tokens_total" not in values and not any(k.startswith("python") for k in values)


def test_parse_reads_the_emulator(emulator_url: str) -> None:
    values = metrics.parse_metrics(httpx.get(emulator_url + "/metrics").text)
    assert values["num_running_reqs"] == 0 and "token_usage" in values


def test_summary_steady_state_and_histogram_means() -> None:
    samples = [
        {
            "t": 0,
            "num_running_reqs": 0,
            "num_queue_reqs": 0,
            "token_usage": 0.1,
            "time_to_first_token_seconds_sum": 1.0,
            "time_to_first_token_seconds_count": 10,
        },
        {"t": 1, "num_running_reqs": 40, "num_queue_reqs": 8, "token_usage": 0.96},
        {"t": 2, "error": "ReadTimeout"},
        {
            "t": 3,
            "num_running_reqs": 30,
            "num_queue_reqs": 0,
            "token_usage": 0.5,
            "time_to_first_token_seconds_sum": 4.0,
            "time_to_first_token_seconds_count": 20,
        },
        {"t": 4, "num_running_reqs": 0, "num_queue_reqs": 0},
    ]
    summary = metrics.summarise(samples)
    assert summary["samples"] == 4  # the failed scrape is not a sample
    assert summary["mean_running"] == 40.0  # the steady state: 30 running is the tail (< 90% of the peak)
    assert summary["peak_running"] == 40 and summary["peak_queued"] == 8
    assert summary["peak_token_usage"] == 0.96
    assert summary["server_mean_ttft_ms"] == pytest.approx(300.0)  # (4 - 1) s / (20 - 10) requests
    # a histogram SGLang has not printed yet has observed nothing: counted from zero
    first_seen = metrics.summarise([{"t": 0, "num_running_reqs": 1}, samples[3]])
    assert first_seen["server_mean_ttft_ms"] == pytest.approx(200.0)


def test_summary_without_samples_keeps_the_note() -> None:
    assert metrics.summarise([], metrics.METRICS_OFF) == {"samples": 0, "note": metrics.METRICS_OFF}


def test_sampler_writes_series_while_requests_run(run_folder: RunFolder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=1.0, log_startup=False))
    body = {"text": "hi", "sampling_params": {"max_new_tokens": 40, "ignore_eos": True}}
    try:
        with metrics.MetricsSampler(url, folder=run_folder, scenario="c4", interval_s=0.05) as sampler:
            with ThreadPoolExecutor(4) as pool:
                answers = list(pool.map(lambda _: httpx.post(url + "/generate", json=body, timeout=30), range(4)))
            time.sleep(0.1)
        assert all(a.status_code == 200 for a in answers)
    finally:
        stop()
    rows = run_folder.metrics_series("c4").read_text().splitlines()
    assert len(rows) == len(sampler.samples) >= 3
    summary = sampler.summary()
    assert summary["peak_running"] >= 1
    assert summary["server_mean_ttft_ms"] is not None


def test_server_without_metrics_gets_a_note(run_folder: RunFolder) -> None:
    url, stop = run_in_thread(EmulatorSettings(port=0, time_scale=0.05, log_startup=False, enable_metrics=False))
    try:
        with metrics.MetricsSampler(url, folder=run_folder, interval_s=0.05) as sampler:
            time.sleep(0.2)
    finally:
        stop()
    assert sampler.summary() == {"samples": 0, "note": metrics.METRICS_OFF}
    assert "--enable-metrics" in metrics.METRICS_OFF
    assert not run_folder.metrics_series("scenario").exists()


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (200, "<html>not prometheus {{", "metrics not readable"),
        (401, '{"error": "Unauthorized"}', "answered 401"),
        (503, "", "answered 503"),
    ],
)
def test_garbage_or_refusal_gets_a_note(status: int, body: str, expected: str) -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(status, text=body))
    sampler = metrics.MetricsSampler("http://server")
    with httpx.Client(transport=transport) as client:
        assert sampler.scrape_once(client) is False
    assert expected in str(sampler.note)
    assert sampler.summary()["samples"] == 0


def test_a_missed_scrape_is_kept_trying() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    sampler = metrics.MetricsSampler("http://server")
    with httpx.Client(transport=httpx.MockTransport(refuse)) as client:
        assert sampler.scrape_once(client) is True
    assert sampler.samples == [{"t": sampler.samples[0]["t"], "error": "ConnectError"}]


def test_a_demo_sized_c4_scenario_is_sampled_while_it_runs(run_folder: RunFolder) -> None:
    """Issue 25 item 2: the demo's smoke scenarios (8 prompts of 128/32 at c4, time scale 0.05) last
    0.1-0.2 s and fell between 0.5 s scrapes. Issue 40 item 6: the fast scrapes were then spent on
    bench_serving's warm-up request, before its 1 s pause (sglang/benchmark/serving.py), and the c4
    chart peaked at 1. The sampler is started before the warm-up, as the speed stage starts it; the
    measured requests must show 4 running, and the series is drawn with them."""
    import subprocess
    import sys

    import pandas as pd

    from kimi_runbooks.emulator.testing import start_subprocess
    from kimi_runbooks.speed.inside import server_timeseries, undrawn_series

    # the demo's server (its own process, h200's profile, time scale 0.05) and its client (another
    # process, as bench_serving: one warm-up request, a 1 s pause, 8 prompts of 128/32 at concurrency 4)
    load = (
        "import httpx, sys, time\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "url = sys.argv[1]\n"
        "body = {'input_ids': list(range(1, 129)), 'sampling_params': {'max_new_tokens': 32, 'ignore_eos': True}}\n"
        "with httpx.Client(timeout=30) as c:\n"
        "    c.get(url + '/health')\n"
        "    print('go', flush=True); sys.stdin.readline()\n"
        "    c.post(url + '/generate', json=body)\n"
        "    time.sleep(1.0); t = time.monotonic()\n"
        "    with ThreadPoolExecutor(4) as pool:\n"
        "        codes = list(pool.map(lambda _: c.post(url + '/generate', json=body).status_code, range(8)))\n"
        "    print(codes, time.monotonic() - t, flush=True)\n"
    )
    with start_subprocess(["--profile", "h200", "--time-scale", "0.05", "--enable-metrics"]) as emu:
        client = subprocess.Popen(
            [sys.executable, "-c", load, emu.base_url], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert client.stdout is not None and client.stdin is not None
        assert client.stdout.readline().strip() == "go"
        with metrics.MetricsSampler(emu.base_url, folder=run_folder, scenario="smoke-c4") as sampler:
            client.stdin.write("\n")
            client.stdin.flush()
            codes, took_text = client.stdout.readline().rsplit(" ", 1)
        client.wait(timeout=30)
    took = float(took_text)
    assert codes == str([200] * 8)
    assert took < 3 * metrics.SAMPLE_INTERVAL_S  # a few steady-state intervals at most, as in the demo
    summary = sampler.summary()
    seen = [(s["t"], s.get("num_running_reqs")) for s in sampler.samples]
    assert summary["peak_running"] == 4, (took, seen)  # the measured requests, not the warm-up's 1
    assert sum(1 for _, running in seen if running == 4) >= 2, (took, seen)
    results = pd.DataFrame([{"scenario": "smoke-c4", "emulated": True}])
    assert undrawn_series(run_folder.path, results) == {}
    fig = server_timeseries(run_folder.path, results)
    assert fig is not None
    running = [t for t in fig.data if t.yaxis in ("y", None)]
    assert running and max(max(t.y) for t in running) == 4


def test_a_series_with_too_few_samples_is_said_not_drawn(run_folder: RunFolder) -> None:
    import pandas as pd

    from kimi_runbooks.speed.inside import server_timeseries, undrawn_series

    for t, running in ((0.0, 0), (0.5, 3), (1.0, 0)):  # one sample while requests ran
        run_folder.append_jsonl(run_folder.metrics_series("short"), {"t": t, "num_running_reqs": running})
    results = pd.DataFrame([{"scenario": "short", "emulated": True}])
    assert "1 /metrics sample(s) taken while its requests ran" in undrawn_series(run_folder.path, results)["short"]
    assert server_timeseries(run_folder.path, results) is None


def test_a_series_zero_throughout_is_said_not_drawn(run_folder: RunFolder, monkeypatch) -> None:
    """Issue 40 item 6: the demo's chart drew "queued requests" as a flat line at 0 in every
    scenario. A series 0 in every sample of every drawn scenario is left out, and a line says so
    (in the speed notebook and the report); one that is non-zero anywhere is drawn for all."""
    import pandas as pd
    import plotly.graph_objects as go

    from kimi_runbooks.report import show
    from kimi_runbooks.report.collect import RunData
    from kimi_runbooks.speed.inside import inside_notes, server_timeseries

    for sid, running in (("c1", (0, 1, 1, 0)), ("c4", (0, 4, 4, 2))):
        for t, value in enumerate(running):
            sample = {"t": t / 10, "num_running_reqs": value, "num_queue_reqs": 0, "token_usage": value / 100}
            run_folder.append_jsonl(run_folder.metrics_series(sid), sample)
    results = pd.DataFrame([{"scenario": "c1", "emulated": True}, {"scenario": "c4", "emulated": True}])
    fig = server_timeseries(run_folder.path, results)
    assert fig is not None
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["running requests", "KV pool usage"]
    assert inside_notes(run_folder.path, results) == ["queued requests: 0 throughout every scenario, not drawn"]

    shown: list[str] = []
    monkeypatch.setattr(show, "_show_figure", lambda fig: shown.append(fig.layout.title.text))
    monkeypatch.setattr(go.Figure, "show", lambda self, *a, **k: shown.append(self.layout.title.text))
    monkeypatch.setattr(show, "_show_html", lambda body: shown.append(body))
    speed = results.assign(status="ok")
    show.show_speed(RunData(run_folder.path, "e1", {}, None, [], None, {"emulated": True}, None, speed, None, {}))
    assert any("Inside the server: queued requests: 0 throughout every scenario, not drawn" in s for s in shown)

    run_folder.append_jsonl(run_folder.metrics_series("c4"), {"t": 0.4, "num_running_reqs": 4, "num_queue_reqs": 2})
    fig = server_timeseries(run_folder.path, results)
    assert fig is not None and "queued requests" in [a.text for a in fig.layout.annotations]
    assert inside_notes(run_folder.path, results) == []


def test_the_chart_starts_where_the_scenarios_requests_start(run_folder: RunFolder) -> None:
    """The stage's first scenario waits seconds for the bench client to start: 300 idle samples at
    0.02 s put its requests at the right edge of a 6 s axis. Each scenario's time counts from its
    last idle sample before its first request, so the scenarios overlay where they ran."""
    from kimi_runbooks.speed.inside import series_frame

    for k in range(300):  # start-up: idle
        run_folder.append_jsonl(run_folder.metrics_series("first"), {"t": k * 0.02, "num_running_reqs": 0})
    for t, running in ((6.0, 1), (6.02, 0), (7.05, 4), (7.1, 4), (7.2, 0)):
        run_folder.append_jsonl(run_folder.metrics_series("first"), {"t": t, "num_running_reqs": running})
    frame = series_frame(run_folder.path, ["first"])
    running = frame[frame["series"] == "running requests"]
    assert list(running["t"]) == [0.0, 0.02, 0.04, 1.07, 1.12, 1.22]
    assert list(running["value"]) == [0, 1, 0, 4, 4, 0]
