"""SGLang's max_running_requests after its speculative hook: one rule for the plan, the model and the emulator."""

from __future__ import annotations

import pytest

from kimi_runbooks.emulator.speculative import resolve_speculative
from kimi_runbooks.plan.running_limit import sglang_max_running_requests, speculative_sets_max_running


@pytest.mark.parametrize("algorithm", ["EAGLE", "eagle3", "NEXTN", "DSPARK", "STANDALONE", "NGRAM", "DFLASH"])
def test_every_in_tree_hook_but_uno_sets_48(algorithm: str) -> None:
    assert sglang_max_running_requests(None, speculative=speculative_sets_max_running(algorithm)) == 48
    assert sglang_max_running_requests(200, speculative=speculative_sets_max_running(algorithm)) == 200


@pytest.mark.parametrize("algorithm", [None, False, "UNO"])
def test_no_algorithm_and_uno_leave_it_to_sglangs_estimate(algorithm: object) -> None:
    assert sglang_max_running_requests(None, speculative=speculative_sets_max_running(algorithm)) is None


def test_the_emulator_resolves_it_by_the_same_rule() -> None:
    # _handle_uno sets no max_running_requests; the emulator had set 48 for any algorithm
    assert "max_running_requests" not in resolve_speculative({"speculative_algorithm": "uno"})
    assert resolve_speculative({"speculative_algorithm": "eagle3"})["max_running_requests"] == 48
    assert "max_running_requests" not in resolve_speculative(
        {"speculative_algorithm": "eagle3", "max_running_requests": 8}
    )
