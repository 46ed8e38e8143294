"""Goodput from per-request latencies: a hand-computed example, SLOs from params, and SGLang's own
calculate_goodput on the same requests (bench tool env) as the judge."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from kimi_runbooks.catalog import Catalog
from kimi_runbooks.speed import goodput
from kimi_runbooks.tools import envs as toolenv

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

# Four requests in a 2 s scenario (times in seconds, as bench_serving's --output-details writes them):
#   r1: TTFT 0.10, 9 gaps of 0.02 -> 10 tokens, TPOT 20 ms           meets both SLOs
#   r2: TTFT 0.50, 9 gaps of 0.02 -> 10 tokens, TPOT 20 ms           misses TTFT (500 > 200)
#   r3: TTFT 0.10, 4 gaps of 0.05 ->  5 tokens, TPOT 50 ms           misses TPOT (50 > 30)
#   r4: failed                                                         never good
DETAILS: dict[str, Any] = {
    "ttfts": [0.10, 0.50, 0.10, 0.0],
    "itls": [[0.02] * 9, [0.02] * 9, [0.05] * 4, []],
    "output_lens": [10, 10, 5, 0],
    "errors": ["", "", "", "ClientConnectorError: connection reset"],
}
SLO = {"ttft_ms": 200.0, "tpot_ms": 30.0}


def test_hand_computed_goodput() -> None:
    got = goodput.goodput(DETAILS, SLO, duration_s=2.0)
    assert got["requests"] == 4 and got["good_requests"] == 1
    assert got["slo_attainment"] == 0.25
    assert got["goodput_req_s"] == 0.5  # 1 good request / 2 s
    assert got["goodput_tok_s"] == 5.0  # its 10 tokens / 2 s
    timings = goodput.request_timings(DETAILS)
    assert timings[0].tpot_ms == pytest.approx(20.0) and timings[0].e2e_ms == pytest.approx(280.0)
    assert timings[2].tpot_ms == pytest.approx(50.0)
    assert not timings[3].ok


def test_each_slo_alone() -> None:
    assert goodput.goodput(DETAILS, {"ttft_ms": 200}, 2.0)["good_requests"] == 2  # r1, r3
    assert goodput.goodput(DETAILS, {"tpot_ms": 30}, 2.0)["good_requests"] == 2  # r1, r2
    assert goodput.goodput(DETAILS, {"e2e_ms": 301}, 2.0)["good_requests"] == 2  # r1 (280 ms), r3 (300 ms)


def test_no_slo_or_no_details_gives_nothing() -> None:
    assert goodput.goodput(DETAILS, {}, 2.0) == {}
    assert goodput.goodput({}, SLO, 2.0) == {}
    assert goodput.goodput(DETAILS, SLO, 0.0) == {}


def test_one_token_answers_have_zero_tpot() -> None:
    one = {"ttfts": [0.1], "itls": [[]], "output_lens": [1], "errors": [""]}
    assert goodput.goodput(one, {"tpot_ms": 1}, 1.0)["good_requests"] == 1


def test_goodput_argv_uses_bench_serving_keys() -> None:
    assert goodput.goodput_argv({"ttft_ms": 3000.0, "tpot_ms": 100.0, "e2e_ms": 9000.5}) == [
        "--goodput",
        "ttft:3000",
        "tpot:100",
        "e2el:9000.5",
    ]
    assert goodput.goodput_argv({}) == []


def test_published_targets_become_slos(catalog: Catalog) -> None:
    """The Ascend A3 deployments' published TPOT (and TTFT) ceilings are the SLOs of their scenarios."""
    assert goodput.slo_for(catalog.scenarios["ascend-a3-8p-in3k5-out1k5-20ms"], catalog) == {"tpot_ms": 20.0}
    assert goodput.slo_for(catalog.scenarios["ascend-a3-16p-in64k-out1k5-prefix90"], catalog) == {
        "ttft_ms": 3000.0,
        "tpot_ms": 100.0,
    }


def test_best_concurrency_of_a_sweep() -> None:
    rows = [
        {"max_concurrency": 1, "goodput": {"slo_attainment": 1.0}},
        {"max_concurrency": 16, "goodput": {"slo_attainment": 0.95}},
        {"max_concurrency": 64, "goodput": {"slo_attainment": 0.4}},
        {"max_concurrency": 128, "goodput": {}},
    ]
    assert goodput.best_concurrency(rows) == 16
    assert goodput.best_concurrency(rows[2:]) is None


SGLANG_JUDGE = """
import json, sys
from sglang.benchmark.goodput import calculate_goodput
from sglang.benchmark.serving import RequestFuncOutput
d, slo = json.load(sys.stdin)
outs = []
for ttft, itl, n, err in zip(d["ttfts"], d["itls"], d["output_lens"], d["errors"]):
    o = RequestFuncOutput()
    o.success, o.ttft, o.itl, o.output_len, o.error = not err, ttft, itl, n, err
    o.latency = ttft + sum(itl)
    outs.append(o)
g = calculate_goodput(outs, slo, 2.0)
print(json.dumps({"request_goodput": g.request_goodput, "slo_attainment": g.slo_attainment}))
"""


def test_matches_sglangs_own_goodput(require_tool_env: Callable[[str], toolenv.ToolEnv]) -> None:
    """SGLang 0.5.23's calculate_goodput on the same requests (latency = TTFT + ITLs) agrees."""
    env = require_tool_env("bench")
    slo = {goodput.SGLANG_SLO_KEYS[k]: v for k, v in SLO.items()}
    proc = subprocess.run(
        [str(env.python), "-c", SGLANG_JUDGE],
        input=json.dumps([DETAILS, slo]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    sglang = json.loads(proc.stdout.strip().splitlines()[-1])
    ours = goodput.goodput(DETAILS, SLO, 2.0)
    assert ours["goodput_req_s"] == pytest.approx(sglang["request_goodput"])
    assert ours["slo_attainment"] == pytest.approx(sglang["slo_attainment"])


def test_goodput_argv_keeps_every_digit_of_a_scaled_slo() -> None:
    """bench_serving must judge against the very ceiling we do: 6 significant digits are not enough."""
    scaled = 1234.5678 * 0.37  # an SLO x a time scale
    argv = goodput.goodput_argv({"ttft_ms": scaled})
    assert float(argv[1].split(":", 1)[1]) == scaled


def test_per_metric_attainment_and_sglangs_success_rule() -> None:
    """Each SLO's own share (as SGLang's slo_attainment_by_metric), and a request with no error counts
    as succeeded even with no tokens (SGLang's rule: success, not output length)."""
    got = goodput.goodput(DETAILS, SLO, duration_s=2.0)
    assert got["slo_attainment_by_metric"] == {"ttft_ms": 0.5, "tpot_ms": 0.5}  # r1+r3, r1+r2
    empty = {"ttfts": [0.0], "itls": [[]], "output_lens": [0], "errors": [""]}
    assert goodput.goodput(empty, {"ttft_ms": 100}, 1.0)["good_requests"] == 1
