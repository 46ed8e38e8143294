"""The emulator's token clock (emulator/clock.py): a deadline already past still yields to the loop,
so a server behind its token schedule (a loaded machine) keeps answering /metrics and other requests
while it decodes, as SGLang does (issue 40 item 6: the demo's samples saw 0 running under load)."""

from __future__ import annotations

import asyncio
import threading
import time

import httpx

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.clock import sleep_until
from kimi_runbooks.emulator.testing import run_in_thread


def test_a_past_deadline_yields_to_other_tasks() -> None:
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    async def main() -> list[str]:
        task = asyncio.create_task(other())
        await sleep_until(time.monotonic() - 1.0)
        seen = list(ran)  # what ran while this task waited for a deadline already past
        await task
        return seen

    assert asyncio.run(main()) == ["other"]


def test_metrics_answer_while_a_request_runs_behind_its_schedule() -> None:
    """At a time scale so small that every token is already due, a long request used to run in
    one go: /metrics was answered only once it had ended and never showed it running."""
    url, stop = run_in_thread(EmulatorSettings(time_scale=1e-6, enable_metrics=True))
    running: list[float] = []
    try:
        body = {"input_ids": [1, 2, 3], "sampling_params": {"max_new_tokens": 30000, "ignore_eos": True}}
        request = threading.Thread(target=lambda: httpx.post(url + "/generate", json=body, timeout=120))
        request.start()
        with httpx.Client(timeout=30) as client:
            while request.is_alive():
                text = client.get(url + "/metrics").text
                line = next(x for x in text.splitlines() if x.startswith("sglang:num_running_reqs"))
                running.append(float(line.rsplit(" ", 1)[1]))
        request.join()
    finally:
        stop()
    assert max(running) == 1, running
