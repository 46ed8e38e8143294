"""The emulator's latency profile comes from the performance model, for every platform."""

from __future__ import annotations

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.emulator.cli import parse_settings
from kimi_runbooks.emulator.latency import DEFAULT_PROFILE, LatencyProfile
from kimi_runbooks.emulator.profile import latency_profile
from kimi_runbooks.perfmodel import Predictor, Scenario
from kimi_runbooks.perfmodel.serving import serving_from_plan
from kimi_runbooks.plan import plan

CATALOG = load_catalog()


@pytest.mark.parametrize("platform_id", sorted(CATALOG.platforms))
def test_profile_for_every_platform(platform_id):
    launch = plan({"platform": platform_id}, CATALOG)
    profile = latency_profile(launch)
    pool = serving_from_plan(launch).decode_pool
    assert profile.max_total_num_tokens == pool.kv_pool_tokens * pool.attention_ranks * pool.replicas
    assert profile.ttft_per_1k_input_ms > 0 and profile.itl_base_ms > 0
    assert "predicted by kimi_runbooks.perfmodel" in profile.source and platform_id in profile.source


@pytest.mark.parametrize("config", [{"platform": "h200"}, {"platform": "b200", "model": "kimi-k2.5-nvfp4", "tp": 4}])
def test_profile_is_the_prediction(config):
    launch = plan(config, CATALOG)
    pr = Predictor(launch)
    profile = latency_profile(launch, pr)
    pool = pr.serving.decode_pool
    # at the samples, exactly the prediction; between them, within the curvature of a segment
    for x, rel in ((1024, 1e-9), (8192, 1e-9), (3000, 0.05), (100_000, 0.05)):
        assert profile.ttft_ms(x) == pytest.approx(pr.prefill_seconds(pool, x) * 1000, rel=rel), x
    for b, ctx, rel in ((1, 1024, 1e-9), (16, 4096, 1e-9), (64, 16384, 1e-9), (24, 3000, 0.05), (300, 50_000, 0.1)):
        expected = pr.iteration_seconds(pool, b, ctx) * 1000
        assert profile.itl_ms(b, b * ctx) == pytest.approx(expected, rel=rel), (b, ctx)
    # and agrees with the single-user prediction (context halfway through the output)
    p = pr.predict(Scenario(1000, 1000, concurrency=1))
    assert profile.itl_ms(1, 1500) == pytest.approx(p.median_itl_ms, rel=0.02)
    # the summary lines are still there for a reader, and for profiles without tables
    assert profile.ttft_per_1k_input_ms > 0 and profile.itl_base_ms > 0


def test_kv_term_is_backward_compatible():
    old = LatencyProfile(itl_base_ms=10, itl_per_running_ms=1)
    assert old.itl_ms(3) == 13 and old.itl_ms(3, 50_000) == 13  # no KV term unless given
    new = LatencyProfile(itl_base_ms=10, itl_per_running_ms=1, itl_per_1k_kv_ms=0.1, itl_per_1k_context_ms=0.6)
    # 3 running holding 50K tokens: + 0.1 x 50 + 0.6 x 50/3
    assert new.itl_ms(3, 50_000) == pytest.approx(13 + 5 + 10)
    assert new.itl_ms(0, 0) == 10
    # a caller that does not say how much KV is held gets assumed_context_tokens per request
    assert new.itl_ms(3) == pytest.approx(new.itl_ms(3, 3 * new.assumed_context_tokens))


def test_emulator_cli_takes_its_profile_from_the_model():
    settings, _ = parse_settings(["--profile", "mi355x"])
    assert settings.profile.source.startswith("predicted by kimi_runbooks.perfmodel for mi355x")
    # the SGLang flags the deploy stage passes select the plan that is predicted
    tp4, _ = parse_settings(["--profile", "b300", "--tp-size", "4"])
    tp8, _ = parse_settings(["--profile", "b300"])
    assert tp4.profile.max_total_num_tokens != tp8.profile.max_total_num_tokens
    # the old straight-line fit is still there on request
    ref, _ = parse_settings(["--profile", "h200", "--profile-from", "references"])
    assert ref.profile.source == "fitted from cookbook-k26-h200"
    # an unknown platform falls back (references, then the default profile)
    unknown, _ = parse_settings(["--profile", "no-such-gpu"])
    assert unknown.profile == DEFAULT_PROFILE


@pytest.mark.parametrize("deployment_id", sorted(CATALOG.deployments))
def test_profile_for_every_multi_node_deployment(deployment_id):
    dep = CATALOG.deployment(deployment_id)
    launch = plan({"platform": dep.platform, "deployment": deployment_id}, CATALOG)
    serving = serving_from_plan(launch)
    profile = latency_profile(launch)
    assert deployment_id in profile.source and profile.ttft_table and profile.itl_table
    # a PD-disaggregated decode pool never waits for prefill; a mixed one does
    assert profile.prefill_stalls_decode == (not serving.disaggregated)
    assert profile.prefill_lanes == serving.prefill_pool.attention_ranks * serving.prefill_pool.replicas
