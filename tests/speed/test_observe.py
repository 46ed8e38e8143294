"""Issue 16 wired into the speed stage: what is sampled where, the row fields a scenario gains, the
table and figure built from them, and (heavy) SGLang's real bench_serving against the emulator:
goodput beside SGLang's own, a server held to two running requests flagged saturated, a sweep
that stops once it saturates."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.kimi.tokenizer_files import make_offline_tokenizer
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.speed.observe import ObservedServer, observe_config, sweep_key, telemetry_source
from kimi_runbooks.speed.results import observed_columns
from kimi_runbooks.target.locate import RunHandle

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out


def _scenario(sid: str, concurrency: int, prompts: int = 16, slo: dict | None = None) -> Scenario:
    return Scenario(
        id=sid,
        title=sid,
        dataset="random-ids",
        input_len=64,
        output_len=24,
        num_prompts=prompts,
        max_concurrency=concurrency,
        request_rate="inf",
        range_ratio=1.0,
        seed=1,
        warmup_requests=0,
        backend="sglang",
        slo=slo,
    )


@pytest.mark.parametrize(
    ("launcher", "url", "emulated", "sampled", "why"),
    [
        ("emulator", "http://127.0.0.1:1", True, False, "emulated server"),
        ("slurm", "http://node7:30000", False, False, "on the nodes"),
        ("multi-node", "http://10.0.0.2:30000", False, False, "on the nodes"),
        ("external", "http://gpu-box:30000", False, False, "server on gpu-box"),
        ("local", "http://127.0.0.1:30000", False, True, "this host (nvidia-smi"),
        ("external", "http://localhost:30000", False, True, "this host (nvidia-smi"),
    ],
)
def test_telemetry_is_sampled_only_on_the_servers_own_host(fake_smi_path, launcher, url, emulated, sampled, why):
    import os

    tool, where = telemetry_source(launcher, url, emulated, "nvidia-smi", dict(os.environ))
    assert (tool is not None) is sampled and why in where


def test_no_smi_tool_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    tool, where = telemetry_source("local", "http://127.0.0.1:30000", False, "rocm-smi", {"PATH": str(tmp_path)})
    assert tool is None and "no rocm-smi tool on this host" in where


def test_the_emulator_is_held_to_slos_scaled_like_its_clock():
    sc = _scenario("s", 4, slo={"ttft_ms": 1000, "tpot_ms": 50})
    fast = observe_config(ObservedServer("emulator", "http://x", emulated=True, time_scale=0.05), [sc])
    real = observe_config(ObservedServer("local", "http://x", emulated=False, time_scale=0.05), [sc])
    assert fast.scaled_slo("s") == pytest.approx({"ttft_ms": 50.0, "tpot_ms": 2.5})
    assert real.scaled_slo("s") == {"ttft_ms": 1000, "tpot_ms": 50}  # time_scale means nothing on hardware


def test_scenarios_of_one_sweep_share_a_key_and_others_do_not():
    assert sweep_key(_scenario("a", 1)) == sweep_key(_scenario("b", 64, prompts=128))
    other = _scenario("c", 1).model_copy(update={"input_len": 1024})
    assert sweep_key(other) != sweep_key(_scenario("a", 1))


def test_observed_columns_and_the_inside_table():
    row = {
        "scenario": "s",
        "server": {"samples": 5, "peak_queued": 6, "peak_token_usage": 0.4},
        "telemetry": {"samples": 0, "where": "emulated server: no devices, no telemetry"},
        "saturation": {"effective_concurrency": 2.0, "saturated": True, "reasons": ["up to 6 requests queued"]},
        "goodput": {"slo": {"ttft_ms": 1000.0}, "slo_attainment": 0.5, "goodput_tok_s": 12.0},
        "efficiency": {"usd_per_million_output_tokens": 3.2, "price_source": "https://example.org/prices"},
    }
    cols = observed_columns(row)
    assert cols["saturated"] is True and cols["saturation_reasons"] == "up to 6 requests queued"
    assert cols["slo"] == "ttft_ms 1000" and cols["goodput_tok_s"] == 12.0
    table = speed.inside_table(pd.DataFrame([{**cols, "scenario": "s", "max_concurrency": 8, "label": "emulated"}]))
    first = table.iloc[0]
    assert first["concurrency (effective)"] == "8 (2 effective)"
    assert first["$ / M output tokens"] == 3.2 and first["price source"] == "https://example.org/prices"


# --------------------------------------------------------------------------- heavy: the real client


@pytest.fixture(scope="module")
def tokenizer(require_tool_env, tmp_path_factory):
    env = require_tool_env("bench")
    return make_offline_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer", env=env)


def _handle(url: str, time_scale: float) -> RunHandle:
    return RunHandle(
        base_url=url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200", time_scale=time_scale
    )


@pytest.mark.heavy
def test_a_scenario_row_carries_server_goodput_and_cost(tokenizer, tmp_path):
    sc = _scenario("slo-c4", 4, prompts=16, slo={"ttft_ms": 1000, "tpot_ms": 50})
    with start_subprocess(["--profile", "h200", "--time-scale", "0.5", "--enable-metrics"]) as emu:
        speed.run_scenarios(
            [sc], _handle(emu.base_url, 0.5), RunFolder.create(tmp_path), tokenizer=tokenizer, offline=True, devices=8,
            platform="h200", timeout_s=300, progress=False, verify_tokens=False,
        )  # fmt: skip
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    assert row["status"] == "ok", row.get("error")
    assert "--goodput" in row["argv"] and "ttft:500" in row["argv"]  # the SLO x time scale 0.5
    assert row["server"]["samples"] >= 2 and row["server"]["peak_running"] >= 1
    assert row["telemetry"]["samples"] == 0 and "emulated" in row["telemetry"]["where"]
    good = row["goodput"]
    assert good["requests"] == 16 and 0 <= good["slo_attainment"] <= 1
    assert good["slo"] == {"ttft_ms": 1000.0, "tpot_ms": 50.0}
    assert isinstance(good["sglang_request_goodput"], float)  # SGLang's own, from its --goodput
    # our count of good requests and SGLang's agree (same SLOs, same per-request timings)
    duration = row["metrics"]["duration"]
    assert good["goodput_req_s"] == pytest.approx(good["sglang_request_goodput"], rel=0.02, abs=1 / duration)
    eff = row["efficiency"]
    assert eff["throughput_origin"] == "emulated" and eff["usd_per_million_output_tokens"] > 0
    assert eff["price_source"].startswith("https://")
    assert (tmp_path / "metrics" / "slo-c4.jsonl").exists()
    assert speed.server_timeseries(tmp_path, speed.load_results(tmp_path)) is not None


@pytest.mark.heavy
def test_load_beyond_the_servers_running_limit_is_flagged_saturated(tokenizer, tmp_path):
    """Two running requests at most: concurrency 8 queues, runs ~2 at a time, and says so."""
    sc = _scenario("sat-c8", 8, prompts=16)
    with start_subprocess(
        ["--profile", "h200", "--time-scale", "1.0", "--max-running-requests", "2", "--enable-metrics"]
    ) as emu:
        df = speed.run_scenarios(
            [sc], _handle(emu.base_url, 1.0), RunFolder.create(tmp_path), tokenizer=tokenizer, offline=True, devices=8,
            platform="h200", timeout_s=300, progress=False, verify_tokens=False,
        )  # fmt: skip
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    sat = row["saturation"]
    print(f"saturation: {sat}; server: {row['server']}")
    assert row["status"] == "ok" and sat["saturated"] is True
    assert sat["effective_concurrency"] <= 2.5 < 8
    assert row["server"]["peak_queued"] >= 4
    assert any("queued" in r for r in sat["reasons"]) and any("on average" in r for r in sat["reasons"])
    assert speed.inside_table(df).iloc[0]["concurrency (effective)"].startswith("8 (")


@pytest.mark.heavy
def test_load_beyond_the_kv_pool_queues_and_is_flagged(tokenizer, tmp_path):
    """A KV pool of 300 tokens holds three 88-token requests: concurrency 8 queues the rest."""
    sc = _scenario("kv-c8", 8, prompts=16)
    args = ["--profile", "h200", "--time-scale", "1.0", "--max-total-num-tokens", "300", "--enable-metrics"]
    with start_subprocess(args) as emu:
        speed.run_scenarios(
            [sc], _handle(emu.base_url, 1.0), RunFolder.create(tmp_path), tokenizer=tokenizer, offline=True, devices=8,
            platform="h200", timeout_s=300, progress=False, verify_tokens=False,
        )  # fmt: skip
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    sat, server = row["saturation"], row["server"]
    print(f"saturation: {sat}; server: {server}")
    assert row["status"] == "ok" and sat["saturated"] is True
    assert sat["effective_concurrency"] < 0.9 * 8 and server["peak_queued"] >= 1
    assert server["peak_token_usage"] > 0.5  # the pool, not a running-request cap, held them back


@pytest.mark.heavy
def test_a_saturated_sweep_stops_and_says_why(tokenizer, tmp_path):
    """Two running requests at most: past concurrency 2 throughput stops growing while requests
    queue, so the sweep stops there and the rest is skipped with the reason (never silently)."""
    sweep = [_scenario(f"sweep-c{c}", c, prompts=8) for c in (2, 4, 8, 16)]
    with start_subprocess(
        ["--profile", "h200", "--time-scale", "0.5", "--max-running-requests", "2", "--enable-metrics"]
    ) as emu:
        speed.run_scenarios(
            sweep, _handle(emu.base_url, 0.5), RunFolder.create(tmp_path), tokenizer=tokenizer, offline=True, devices=8,
            platform="h200", timeout_s=300, progress=False, verify_tokens=False, stop_when_saturated=True,
        )  # fmt: skip
    rows = [r for r in read_jsonl(tmp_path / "bench.jsonl")]
    statuses = {r["scenario"]: r["status"] for r in rows}
    assert statuses["sweep-c2"] == "ok" and statuses["sweep-c16"] == "skipped", statuses
    skipped = [r for r in rows if r["status"] == "skipped"]
    last_run = rows[len(rows) - len(skipped) - 1]
    assert last_run["saturation"]["saturated"] is True
    assert all(f"the sweep saturated at {last_run['scenario']}" in r["error"] for r in skipped)


@pytest.mark.heavy
def test_the_demos_c4_scenario_is_sampled_with_4_running(tokenizer, tmp_path):
    """Issue 40 item 6: at the demo's settings (the smoke set's c4 scenario, time scale 0.05, real
    bench_serving with its warm-up request and 1 s pause) the samples peaked at 1 running, the
    warm-up. They must show the measured requests: 4 running, the scenario's concurrency."""
    from kimi_runbooks.speed.scenarios import select_scenarios

    sc = next(s for s in select_scenarios("smoke") if s.id == "smoke-random-ids-c4")
    assert sc.max_concurrency == 4 and sc.warmup_requests == 1
    with start_subprocess(["--profile", "h200", "--time-scale", "0.05", "--enable-metrics"]) as emu:
        speed.run_scenarios(
            [sc], _handle(emu.base_url, 0.05), RunFolder.create(tmp_path), tokenizer=tokenizer, offline=True, devices=8,
            platform="h200", timeout_s=300, progress=False, verify_tokens=False,
        )  # fmt: skip
    row = read_jsonl(tmp_path / "bench.jsonl")[-1]
    assert row["status"] == "ok", row.get("error")
    samples = read_jsonl(tmp_path / "metrics" / f"{sc.id}.jsonl")
    running = [s.get("num_running_reqs") for s in samples]
    assert row["server"]["peak_running"] == 4 and running.count(4) >= 2, running


@pytest.mark.parametrize("price", ["3.5", -1.0, 0, True])
def test_a_price_that_is_not_a_positive_number_is_refused_with_the_fix(price):
    from kimi_runbooks.speed.argv import BenchTarget
    from kimi_runbooks.speed.observe import observe_for_run

    with pytest.raises(ValueError, match="price_per_device_hour is .*Fix: a positive number"):
        run = SimpleNamespace(
            target=BenchTarget(base_url="http://127.0.0.1:1"),
            common={"emulated": True, "platform": "h200"},
            folder=None,
        )
        observe_for_run(run, None, [], True, None, None, price, None)
