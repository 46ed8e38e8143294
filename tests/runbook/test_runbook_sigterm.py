"""A runbook killed with SIGTERM mid-run still tears down the server its deploy stage left up."""

import signal
import time

import pytest

from kimi_runbooks.procs import group_alive
from tests.support.background_runbook import runbook_in_background

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out


def test_sigterm_during_a_stage_tears_the_server_down(tmp_path):
    folder = tmp_path / "run"
    with runbook_in_background(folder, ["deploy", "invoke", "report"]) as (proc, pgid):
        assert group_alive(pgid)  # left running for the invoke stage
        time.sleep(2)  # the invoke stage is under way
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not group_alive(pgid), "server outlived the killed runbook"
        assert '"stage": "teardown"' in (folder / "stages.jsonl").read_text()
