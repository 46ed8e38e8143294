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
