"""Time to first answer token: the streaming probe against the emulator (a thinking model)."""

from __future__ import annotations

import pandas as pd
import pytest

from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.speed.answer_probe import answer_results, probe
from kimi_runbooks.speed.timescale import rescale


def _chat(output_len: int = 256, backend: str = "sglang-oai-chat") -> Scenario:
    return Scenario(id="chat", dataset="random", input_len=64, output_len=output_len, num_prompts=4, backend=backend)


def test_a_thinking_model_answers_after_its_reasoning() -> None:
    with emulator_server(time_scale=0.02, log_startup=False) as url:
        out = answer_results(_chat(), url, None, None, 3)
    found = out["first_answer"]
    assert found["errors"] == [] and found["thinking"] is True and found["no_answer"] == 0
    assert 0 < out["median_first_reasoning_ms"] < out["median_first_answer_ms"]
    assert found["max_tokens"] == 256


def test_without_a_reasoning_parser_the_first_answer_is_the_first_token() -> None:
    with emulator_server(time_scale=0.02, log_startup=False, fault="no-reasoning") as url:
        found = probe(url, None, requests=2, max_tokens=64)
    assert found["thinking"] is False and found["median_first_reasoning_ms"] is None
    assert found["median_first_answer_ms"] is not None and found["no_answer"] == 0


def test_reasoning_that_uses_up_max_tokens_leaves_no_answer_time() -> None:
    with emulator_server(time_scale=0.02, log_startup=False) as url:
        found = probe(url, None, requests=2, max_tokens=4)
        short = answer_results(_chat(output_len=24), url, None, None, 1)
    assert found["median_first_answer_ms"] is None  # not averaged in as zero
    assert found["no_answer"] == 2 and found["median_first_reasoning_ms"] > 0
    # a scenario's short output still gets room for the answer to start
    assert short["first_answer"]["max_tokens"] == 256 and short["median_first_answer_ms"] > 0


def test_a_native_backend_scenario_of_a_thinking_model_gets_its_first_answer_time_too() -> None:
    with emulator_server(time_scale=0.02, log_startup=False) as url:
        out = answer_results(_chat(backend="sglang"), url, None, None, 2)
    assert out["first_answer"]["thinking"] is True and out["first_answer"]["errors"] == []
    assert 0 < out["median_first_reasoning_ms"] < out["median_first_answer_ms"]


def test_off_with_no_probes_or_no_url_and_a_dead_server_is_an_error_not_a_raise() -> None:
    assert answer_results(_chat(), "http://127.0.0.1:9", None, None, 0) == {}
    assert answer_results(_chat(), None, None, None, 3) == {}
    dead = probe("http://127.0.0.1:9", None, requests=2, timeout=5)
    assert len(dead["errors"]) == 2 and dead["median_first_answer_ms"] is None


def test_first_answer_times_are_rescaled_with_the_row() -> None:
    row = pd.DataFrame(
        [
            {
                "scenario": "chat",
                "status": "ok",
                "emulated": True,
                "median_ttft_ms": 1.0,
                "median_first_answer_ms": 3.0,
                "first_answer": {"median_first_answer_ms": 3.0, "median_first_reasoning_ms": None, "requests": 3},
            }
        ]
    )
    out = rescale(row, 0.05).iloc[0]
    assert out["median_first_answer_ms"] == pytest.approx(60.0)
    assert out["first_answer"] == {"median_first_answer_ms": 60.0, "median_first_reasoning_ms": None, "requests": 3}
