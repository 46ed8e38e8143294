"""Goodput against SGLang's own --goodput in a run where some requests miss the SLO (issue 25 item 9).

SGLang 0.5.23's real bench_serving client drives the emulator with requests whose TTFT, TPOT and
end-to-end latency spread on purpose: inputs of 100-1000 tokens at 0.4 ms a prefill token (TTFT
~140-1040 ms with the prefill queue), outputs of 6-60 tokens at 10 ms a token, and a running
request's next token stalled while another's prefill runs (TPOT 10-83 ms). The emulator schedules
by its clock, but which requests overlap follows the client's pace, so a loaded machine shifts the spread.
The SLOs sit inside each spread, so every metric has requests that meet it and requests that miss it.
The project's goodput (from the per-request details) must then equal SGLang's figure, overall and per metric;
and the same details judged in the wrong unit, or with a metric left out that some requests missed alone,
must NOT equal it, so the comparison can fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed import goodput
from kimi_runbooks.speed.bench_failure import raw_result
from kimi_runbooks.target.locate import RunHandle

pytestmark = pytest.mark.slow

SLO = {"ttft_ms": 525.0, "tpot_ms": 32.0, "e2e_ms": 1850.0}
EMULATOR = [
    "--profile", "default", "--time-scale", "1.0", "--ttft-ms", "50", "--ttft-per-1k-ms", "400",
    "--itl-ms", "10", "--itl-per-running-ms", "0", "--enable-metrics",
]  # fmt: skip
AMBIGUOUS_MS = 1.0
"""SGLang's latency is read at [DONE], ours at the last token (~0.1 ms apart here): a request within
this of a ceiling could be judged either way, and is allowed to differ (one request per such case)."""


@pytest.fixture(scope="module")
def tokenizer(require_tool_env, tmp_path_factory):
    env = require_tool_env("bench")
    return make_offline_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer", env=env)


def _observed(t: goodput.RequestTiming) -> dict[str, float | None]:
    return {"ttft_ms": t.ttft_ms, "tpot_ms": t.tpot_ms, "e2e_ms": t.e2e_ms}


def _near_a_ceiling(t: goodput.RequestTiming) -> bool:
    return any(v is not None and abs(v - SLO[k]) <= AMBIGUOUS_MS for k, v in _observed(t).items())


def _missed(t: goodput.RequestTiming) -> set[str]:
    """The ceilings this request's own timings are above."""
    return {k for k, v in _observed(t).items() if v is not None and v > SLO[k]}


@pytest.mark.heavy
def test_goodput_equals_sglangs_when_some_requests_miss_the_slo(tokenizer, tmp_path: Path) -> None:
    sc = Scenario(
        id="slo-mix", title="slo-mix", dataset="random-ids", input_len=1000, output_len=60, num_prompts=16,
        max_concurrency=3, request_rate="inf", range_ratio=0.1, seed=3, warmup_requests=0, backend="sglang",
        slo=SLO,
    )  # fmt: skip
    with start_subprocess(EMULATOR) as emu:
        handle = RunHandle(
            base_url=emu.base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200", time_scale=1.0
        )
        speed.run_scenarios(
            [sc], handle, RunFolder.create(tmp_path), tokenizer=tokenizer, offline=True, devices=8, platform="h200",
            timeout_s=300, progress=False, verify_tokens=False,
        )  # fmt: skip
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    assert row["status"] == "ok", row.get("error")
    assert {"ttft:525", "tpot:32", "e2el:1850"} <= set(row["argv"])  # SGLang judged the same ceilings
    raw = raw_result(Path(row["output_file"]))
    timings = goodput.request_timings(raw)
    assert len(timings) == 16 and all(t.ok for t in timings)
    print("per request (ttft, tpot, e2e ms):", [(round(t.ttft_ms), round(t.tpot_ms), round(t.e2e_ms)) for t in timings])  # type: ignore[arg-type]

    # the run is the one asked for (SGLang judging): each metric met by some requests, missed by others
    good = row["goodput"]
    for key, share in raw["slo_attainment_by_metric"].items():
        assert 0 < share < 1, f"{key}: every request met it or none did ({share}); the SLO cannot be tested"
    duration = raw["duration"]
    sglang_good = round(raw["request_goodput"] * duration)
    assert 0 < sglang_good < 16

    slack = sum(_near_a_ceiling(t) for t in timings)
    assert abs(good["good_requests"] - sglang_good) <= slack
    assert good["goodput_req_s"] == pytest.approx(good["sglang_request_goodput"], abs=slack / duration + 1e-9)
    assert good["slo_attainment"] == pytest.approx(good["sglang_slo_attainment"], abs=slack / 16 + 1e-9)
    for key, share in good["sglang_slo_attainment_by_metric"].items():
        assert good["slo_attainment_by_metric"][key] == pytest.approx(share, abs=slack / 16 + 1e-9), key
    # SGLang's mean e2e (its latency, at [DONE]) is ours (TTFT + ITLs) to well under a millisecond
    ours_mean = sum(t.e2e_ms for t in timings) / len(timings)  # type: ignore[misc]
    assert ours_mean == pytest.approx(raw["mean_e2e_latency_ms"], abs=AMBIGUOUS_MS)

    # the comparison can fail: the same details judged wrongly give a different count than SGLang's.
    # Leaving a metric out changes the count only through requests that missed that metric alone;
    # which those are depends on how the client's requests overlapped (CI's loaded machine once gave
    # none for e2e), so that check runs for each metric some requests missed alone, and one must.
    alone = {key: sum(_missed(t) == {key} for t in timings) for key in SLO}
    print("requests that missed only this ceiling:", alone)
    decisive = [key for key, n in alone.items() if n > slack]
    assert decisive, f"no request missed exactly one ceiling ({alone}): leaving a metric out cannot be tested"
    wrong = {f"without {key}": {k: v for k, v in SLO.items() if k != key} for key in decisive}
    wrong["ceilings read as seconds"] = {k: v * 1000 for k, v in SLO.items()}
    wrong["timings read as seconds"] = {k: v / 1000 for k, v in SLO.items()}
    for name, slo in wrong.items():
        count = goodput.goodput(raw, slo, duration)["good_requests"]
        assert abs(count - sglang_good) > slack, f"judged {name}, goodput would still agree: not a test"
