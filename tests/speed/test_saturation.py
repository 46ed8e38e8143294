"""Saturation flags: effective concurrency below the requested one, queueing, a full KV pool; and the
sweep's early stop once throughput stops growing while the server queues."""

from __future__ import annotations

from kimi_runbooks.speed import saturation


def test_not_saturated_when_the_server_ran_what_was_asked() -> None:
    got = saturation.saturation(
        16, 64, {"samples": 10, "mean_running": 15.2, "peak_queued": 0, "peak_token_usage": 0.4}
    )
    assert got["saturated"] is False and got["reasons"] == []
    assert got["effective_concurrency"] == 15.2


def test_each_reason_is_named() -> None:
    got = saturation.saturation(
        64, 640, {"samples": 10, "mean_running": 41, "peak_queued": 23, "peak_token_usage": 0.97}
    )
    assert got["saturated"] is True
    assert got["reasons"] == [
        "ran 41 requests at a time on average, 64 requested",
        "up to 23 requests queued",
        "KV pool 97% full",
    ]


def test_fewer_prompts_than_concurrency_is_the_target() -> None:
    """c=64 with 10 prompts can never run 64 at once: the target is 10."""
    got = saturation.saturation(64, 10, {"samples": 5, "mean_running": 9.5, "peak_queued": 0})
    assert got["requested_concurrency"] == 10 and not got["saturated"]


def test_no_metrics_no_verdict_on_effective_concurrency() -> None:
    got = saturation.saturation(64, 640, {"samples": 0, "note": "metrics off"})
    assert got["saturated"] is False and got["effective_concurrency"] is None


def test_concurrency_label() -> None:
    assert saturation.concurrency_label(64, 41.2) == "64 (41 effective)"
    assert saturation.concurrency_label(64, 63.0) == "64"
    assert saturation.concurrency_label(64, None) == "64"
    assert saturation.concurrency_label(None, 3) == "–"


def test_should_stop_once_throughput_flattens_while_saturated() -> None:
    before = {"metrics": {"output_throughput": 1000.0}}
    flat_and_queued = {"metrics": {"output_throughput": 1020.0}, "saturation": {"saturated": True}}
    growing_and_queued = {"metrics": {"output_throughput": 1500.0}, "saturation": {"saturated": True}}
    flat_not_queued = {"metrics": {"output_throughput": 1000.0}, "saturation": {"saturated": False}}
    assert saturation.should_stop(before, flat_and_queued)
    assert not saturation.should_stop(before, growing_and_queued)
    assert not saturation.should_stop(before, flat_not_queued)
    assert not saturation.should_stop(None, flat_and_queued)


def test_a_scenario_too_short_to_sample_is_not_called_saturated():
    """Two samples while requests ran (a 0.1 s scenario, a 0.5 s sampler) say nothing about the mean."""
    short = saturation.saturation(4, 8, {"samples": 3, "mean_running": 1.0, "busy_samples": 2, "peak_queued": 0})
    assert short["saturated"] is False and short["effective_concurrency"] is None
    assert "too short" in short["note"]
    enough = saturation.saturation(4, 8, {"samples": 9, "mean_running": 1.0, "busy_samples": 6, "peak_queued": 0})
    assert enough["saturated"] is True and enough["effective_concurrency"] == 1.0


def _samples(running: list[int], queued: list[int] | None = None, usage: float = 0.0005) -> list[dict]:
    queued = queued or [0] * len(running)
    return [
        {"t": 0.1 * i, "num_running_reqs": r, "num_queue_reqs": q, "token_usage": usage}
        for i, (r, q) in enumerate(zip(running, queued))
    ]


def test_the_idle_c4_case_requests_tailing_off_at_the_end_are_not_saturation() -> None:
    """Issue 25 item 3: an unloaded c4 run (no queue, KV pool 0.05% used) was flagged saturated ("ran 3
    ... 4 requested") because the requests draining at the end entered the mean; only the steady state
    counts now. The ramp's queued prefill at the start is not saturation either."""
    from kimi_runbooks.speed.server_metrics import summarise

    server = summarise(_samples([0, 2, 4, 4, 4, 4, 3, 2, 1, 0], queued=[0, 2, 0, 0, 0, 0, 0, 0, 0, 0]))
    got = saturation.saturation(4, 8, server)
    assert got["saturated"] is False, got["reasons"]
    assert got["effective_concurrency"] == 4.0 and server["steady_samples"] == 4
    assert server["peak_queued"] == 2 and server["steady_queued"] == 0  # the peak is still reported


def test_a_server_that_runs_fewer_than_asked_in_its_steady_state_is_still_saturated() -> None:
    from kimi_runbooks.speed.server_metrics import summarise

    running = [0, 10, 41, 41, 40, 41, 41, 30, 12, 0]
    server = summarise(_samples(running, queued=[0, 0, 23, 23, 22, 20, 10, 0, 0, 0], usage=0.5))
    got = saturation.saturation(64, 640, server)
    assert got["saturated"] is True
    assert got["reasons"] == ["ran 40.8 requests at a time on average, 64 requested", "up to 23 requests queued"]
