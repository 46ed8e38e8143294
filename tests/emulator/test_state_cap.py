"""A hybrid model on the emulator: /model_info names its checkpoint's architecture, and the recurrent-state
pool caps the running batch as SGLang's resolve_max_num_reqs does, the rest queued (sglang:num_running_reqs,
sglang:num_queue_reqs)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.catalog.values import ParamsError
from kimi_runbooks.deploy.launchers.emulator import emulator_argv
from kimi_runbooks.emulator.cli import parse_settings
from kimi_runbooks.emulator.state_cap import state_cap, state_settings
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.state_pool import state_settings as plan_state_settings

from .test_emulator import parse_metrics

K3 = ["--model", "moonshotai/Kimi-K3", "--model-path", "moonshotai/Kimi-K3"]


def test_model_info_reports_the_served_checkpoints_architecture() -> None:
    k3, _ = parse_settings(K3)
    k26, _ = parse_settings(["--model", "moonshotai/Kimi-K2.6"])
    with emulator_server(k3, log_startup=False) as url:
        info = httpx.get(url + "/model_info").json()
    assert info["model_type"] == "kimi_k3" and info["architectures"] == ["KimiK3ForConditionalGeneration"]
    assert info["reasoning_parser"] == "kimi_k3" and info["has_image_understanding"] is True
    with emulator_server(k26, log_startup=False) as url:
        info = httpx.get(url + "/model_info").json()
    assert info["model_type"] == "kimi_k25" and info["architectures"] == ["KimiK25ForConditionalGeneration"]


def test_state_cap_follows_sglang_slots_per_request() -> None:
    model = load_catalog().model("kimi-k3")
    assert state_cap(model, {"max_mamba_cache_size": 458}) == 91  # extra_buffer: 5 slots per request
    assert state_cap(model, {"max_mamba_cache_size": 458, "mamba_radix_cache_strategy": "extra_buffer_lazy"}) == 114
    assert state_cap(model, {"max_mamba_cache_size": 458, "disable_radix_cache": True}) == 458
    both = {"max_mamba_cache_size": 100, "enable_dp_attention": True, "dp_size": 2}
    assert state_cap(model, both) == 40  # each DP-attention worker has its own pool
    assert state_cap(model, {}) is None  # no slot count given: not capped
    assert state_cap(load_catalog().model("kimi-k2.6"), {"max_mamba_cache_size": 458}) is None  # not hybrid


def test_a_state_pool_too_small_for_one_request_is_refused() -> None:
    with pytest.raises(SystemExit):
        parse_settings([*K3, "--max-mamba-cache-size", "3"])


def test_the_deploy_stage_hands_the_planned_state_pool_to_the_emulator() -> None:
    launch = plan({"platform": "b300", "model": "kimi-k3"})
    state = launch.memory.state_pool
    assert state is not None
    argv = emulator_argv(launch, host="127.0.0.1", port=1)
    assert argv[argv.index("--max-mamba-cache-size") + 1] == str(state.slots)
    settings, args = parse_settings(argv[3:])
    # the plan's DSPARK overlay gives no --max-running-requests: SGLang 0.5.23 runs at most 48 (_handle_dspark),
    # below what the state pool admits, so the state pool caps nothing and SGLang logs no cap
    assert state.state_requests > 48 and state.max_running_requests == 48
    assert settings.profile.max_running_requests == 48 and args.state_cap_line is None
    no_spec = plan({"platform": "b300", "model": "kimi-k3", "speculative": False})
    assert no_spec.memory.state_pool is not None
    capped_settings, capped_args = parse_settings(emulator_argv(no_spec, host="127.0.0.1", port=1)[3:])
    assert capped_settings.profile.max_running_requests == no_spec.memory.state_pool.max_running_requests
    assert "capped to" in capped_args.state_cap_line and "by the mamba state cache" in capped_args.state_cap_line
    k26 = emulator_argv(plan({"platform": "b300"}), host="127.0.0.1", port=1)
    assert "--max-mamba-cache-size" not in k26


def test_emulator_runs_at_most_what_the_state_pool_admits_and_queues_the_rest() -> None:
    # 10 slots at 4 per request (extra_buffer_lazy) admit 2 requests; 5 are sent at once
    settings, _ = parse_settings(
        [*K3, "--max-mamba-cache-size", "10", "--mamba-radix-cache-strategy", "extra_buffer_lazy"]
        + ["--itl-ms", "20", "--itl-per-running-ms", "0", "--ttft-ms", "5", "--enable-metrics"]
    )
    assert settings.profile.max_running_requests == 2
    with emulator_server(settings, log_startup=False) as url:
        info = httpx.get(url + "/server_info").json()
        assert info["max_mamba_cache_size"] == 10
        assert info["internal_states"][0]["effective_max_running_requests_per_dp"] == 2

        async def run() -> tuple[list[int], list[dict[str, float]]]:
            async with httpx.AsyncClient(timeout=60) as http:
                body = {"input_ids": [1] * 16, "sampling_params": {"max_new_tokens": 25, "ignore_eos": True}}

                async def one() -> int:
                    return (await http.post(url + "/generate", json=body)).status_code

                async def watch(tasks: list[asyncio.Task[int]]) -> list[dict[str, float]]:
                    seen = []
                    while not all(t.done() for t in tasks):
                        seen.append(parse_metrics((await http.get(url + "/metrics")).text))
                        await asyncio.sleep(0.02)
                    return seen

                tasks = [asyncio.create_task(one()) for _ in range(5)]
                seen = await watch(tasks)
                return [await t for t in tasks], seen

        codes, seen = asyncio.run(run())
    assert codes == [200] * 5
    running = [m["sglang:num_running_reqs"] for m in seen]
    queued = [m["sglang:num_queue_reqs"] for m in seen]
    assert max(running) == 2  # never more than the state pool admits
    assert max(queued) >= 1  # the others waited in the queue
    assert all(r + q <= 5 for r, q in zip(running, queued))


def test_the_emulator_reads_the_state_flags_as_the_planner_does() -> None:
    """One reader: the emulator's snake_case launch args give the planner's StateSettings, speculative
    draft tokens included, and a value SGLang could not read is the planner's one-line error."""
    args = {
        "max_mamba_cache_size": 458,
        "speculative_algorithm": "DSPARK",
        "speculative_dspark_block_size": 7,
        "mamba_ssm_dtype": "bfloat16",
    }
    flags = {"--" + k.replace("_", "-"): v for k, v in args.items()}
    assert state_settings(args) == plan_state_settings(flags)
    assert state_settings(args).speculative_draft_tokens == 8  # DSPARK verifies block + 1 tokens
    with pytest.raises(ParamsError, match="--mamba-ssm-dtype"):
        state_settings({**args, "mamba_ssm_dtype": "$(x)"})
