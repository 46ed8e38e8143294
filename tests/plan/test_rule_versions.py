"""Rules with an SGLang version range: each tested at both ends of its range, on real plans.

Boundaries and their sources:
- AITER MLA heads: the 16-or-128 assertion is in the sglang 0.5.10.post1 wheel's
  python/sglang/srt/layers/attention/aiter_backend.py and gone in 0.5.11 (sgl-project/sglang PR 21213).
- EAGLE3 on AMD: AMD ROCm blog 'Faster Kimi-K2.5-W4A8 Decoding with EAGLE3 on AMD Instinct MI325X'
  (a v0.5.10rc0-based image), https://rocm.blogs.amd.com/artificial-intelligence/kimi-k2.5-speculative/README.html;
  --disable-custom-all-reduce from sgl-project/sglang PR 29313.
- tokenspeed_mla: absent from the 0.5.11 wheel's attention backends, present in 0.5.12's (PR 24925);
  refused without FP8 KV through the 0.5.22 wheel, aliased to cutedsl_mla with FP8 KV set in 0.5.23.
"""

import subprocess
import sys

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.plan import plan
from kimi_runbooks.plan.rules import rule_applies

# rule id -> (a plan the rule judges, [(version, the rule applies there)] at both ends of its range)
ENDS = {
    "amd-aiter-mla-heads": (
        {"platform": "mi355x", "tp": 8},
        [("0.5.9", True), ("0.5.10.post1", True), ("0.5.11rc0", False), ("0.5.11", False), ("0.5.23", False)],
    ),
    "amd-aiter-mla-heads-padded": (
        {"platform": "mi355x", "tp": 8},
        [("0.5.10.post1", False), ("0.5.11rc0", True), ("0.5.11", True), ("0.5.23", True)],
    ),
    "amd-aiter-small-heads-cdna3": (
        {"platform": "mi300x", "tp": 8},
        [("0.5.10.post1", False), ("0.5.11", True), ("0.5.23", True)],
    ),
    "eagle3-not-on-amd": (
        {"platform": "mi355x", "speculative": True},
        [("0.5.9", True), ("0.5.10.dev0", True), ("0.5.10rc0", False), ("0.5.10", False), ("0.5.23", False)],
    ),
    "tokenspeed-mla-not-in-release": (
        {"platform": "b300", "model": "kimi-k2.7-code"},
        [("0.5.9", True), ("0.5.11", True), ("0.5.12rc0", False), ("0.5.12", False), ("0.5.23", False)],
    ),
    "tokenspeed-mla-needs-fp8-kv": (
        {"platform": "b300", "model": "kimi-k2.7-code"},
        [("0.5.11", False), ("0.5.12", True), ("0.5.22", True), ("0.5.23rc0", False), ("0.5.23", False)],
    ),
    "tokenspeed-mla-sets-fp8-kv": (
        {"platform": "b300", "model": "kimi-k2.7-code"},
        [("0.5.22", False), ("0.5.23rc0", True), ("0.5.23", True)],
    ),
    "eagle3-on-amd-custom-image": (
        {"platform": "mi355x", "speculative": True},
        [("0.5.9", False), ("0.5.10.dev0", False), ("0.5.10rc0", True), ("0.5.23", True)],
    ),
}


def _facts(config: dict) -> dict:
    captured: dict = {}
    import kimi_runbooks.plan.server_rules as server_rules

    original = server_rules.rule_facts

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        facts = original(*args, **kwargs)
        captured.update(facts)
        return facts

    server_rules.rule_facts = spy
    try:
        plan(config)
    finally:
        server_rules.rule_facts = original
    return captured


def test_every_versioned_rule_is_tested_at_both_ends() -> None:
    versioned = {r.id for r in load_catalog().rules if r.applies.sglang}
    assert versioned == set(ENDS)
    for rule_id, (_, cases) in ENDS.items():
        assert {applies for _, applies in cases} == {True, False}, rule_id


@pytest.mark.parametrize("rule_id", sorted(ENDS))
def test_the_rule_applies_inside_its_range_only(rule_id: str) -> None:
    rule = next(r for r in load_catalog().rules if r.id == rule_id)
    config, cases = ENDS[rule_id]
    facts = _facts(config)
    for version, applies in cases:
        assert rule_applies(rule, {**facts, "sglang_version": version}) is applies, (rule_id, version)


@pytest.mark.parametrize("version,refused", [("0.5.10.post1", True), ("0.5.11", False)])
def test_mi355x_tp8_across_the_aiter_boundary(version: str, refused: bool) -> None:
    p = plan({"platform": "mi355x", "tp": 8, "sglang_version": version})
    assert ("amd-aiter-mla-heads" in {e.id for e in p.errors}) is refused
    assert p.ok is not refused


def test_padded_rule_still_refuses_what_padding_cannot_serve() -> None:
    p = plan({"platform": "mi355x", "tp": 3, "devices": 3, "sglang_version": "0.5.23"})
    assert "amd-aiter-mla-heads-padded" in {e.id for e in p.errors}  # 64 heads do not split over 3


def test_eagle3_on_amd_is_refused_on_059_and_allowed_from_amds_version() -> None:
    old = plan({"platform": "mi355x", "speculative": True})
    assert "eagle3-not-on-amd" in {e.id for e in old.errors}
    new = plan({"platform": "mi355x", "speculative": True, "sglang_version": "0.5.10rc0"})
    assert new.ok, [str(e) for e in new.errors]
    assert "eagle3-on-amd-custom-image" in {w.id for w in new.warnings}
    argv = new.argv
    assert "--disable-custom-all-reduce" in argv  # sgl-project/sglang PR 29313
    assert argv[argv.index("--speculative-algorithm") + 1] == "EAGLE3"
    assert argv[argv.index("--speculative-draft-model-path") + 1] == "lightseekorg/kimi-k2.6-eagle3.1-mla"


def test_eagle3_on_nvidia_gets_no_amd_flag() -> None:
    assert "--disable-custom-all-reduce" not in plan({"platform": "h200", "speculative": True}).argv


def test_kimi_k25_eagle3_uses_its_draft_and_the_spec_v2_env() -> None:
    p = plan({"platform": "h200", "model": "kimi-k2.5", "speculative": True})
    assert p.ok, [str(e) for e in p.errors]
    assert p.argv[p.argv.index("--speculative-draft-model-path") + 1] == "lightseekorg/kimi-k2.5-eagle3"
    assert p.env["SGLANG_ENABLE_SPEC_V2"] == "1"
    assert "SGLANG_ENABLE_SPEC_V2" not in plan({"platform": "h200", "model": "kimi-k2.5"}).env


def test_mxfp4_runs_where_the_hardware_has_mxfp4() -> None:
    assert plan({"platform": "mi355x", "model": "kimi-k2.5-mxfp4"}).ok
    for platform in ("mi300x", "mi325x"):
        errors = {e.id for e in plan({"platform": platform, "model": "kimi-k2.5-mxfp4"}).errors}
        assert "fp4-weights-need-hardware" in errors, platform


def test_fp4_checkpoints_are_judged_by_hardware_not_by_vendor() -> None:
    """An AMD-published MXFP4 checkpoint on Blackwell (which has MXFP4 tensor cores) is exploratory,
    not refused for its vendor; NVFP4 on AMD is refused once, by the hardware rule."""
    b200 = plan({"platform": "b200", "model": "kimi-k2.5-mxfp4"})
    assert b200.ok and "no-published-recipe" in {w.id for w in b200.warnings}
    mi355x = {e.id for e in plan({"platform": "mi355x", "model": "kimi-k2.6-nvfp4"}).errors}
    assert mi355x == {"fp4-weights-need-hardware"}
    assert "model-not-for-vendor" in {e.id for e in plan({"platform": "h200", "model": "kimi-k2.6-w4a8"}).errors}


def test_plan_lists_the_rules_that_changed_against_the_default_version() -> None:
    p = plan({"platform": "mi355x", "tp": 8, "sglang_version": "0.5.23"})
    changed = {c.rule_id: c for c in p.version_changes}
    assert changed["amd-aiter-mla-heads"].fires_at_default and not changed["amd-aiter-mla-heads"].applies_now
    assert changed["amd-aiter-mla-heads-padded"].applies_now and not changed["amd-aiter-mla-heads-padded"].fires_now
    assert plan({"platform": "mi355x"}).version_changes == []


def test_a_deployment_lists_the_rules_that_changed_against_the_default_version() -> None:
    """A published deployment at another SGLang version says which rules read differently, as a
    single-server plan does (eagle3-not-on-amd's range ends at 0.5.10rc0; the default is older)."""
    deployment = {"platform": "ascend-a3", "deployment": "ascend-a3-8p-in3k5-out1k5-20ms"}
    changed = {c.rule_id: c for c in plan({**deployment, "sglang_version": "0.5.23"}).version_changes}
    assert changed["eagle3-not-on-amd"].applies_at_default and not changed["eagle3-not-on-amd"].applies_now
    assert not changed["eagle3-not-on-amd"].fires_at_default  # Ascend is not AMD
    assert plan(deployment).version_changes == []


def test_rules_command_lists_every_rule_with_range_and_source() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", "rules", "--sglang-version", "0.5.23"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for rule in load_catalog().rules:
        assert f"\n{rule.id} (" in "\n" + proc.stdout, rule.id
    assert "amd-aiter-mla-heads (error, rule) SGLang <0.5.11rc0 [does not apply at 0.5.23]" in proc.stdout
    assert "source: sgl-project/sglang PR 21213" in proc.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", "rules", "--sglang-version", "latest"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "0.5.9" in bad.stderr


def test_a_plan_for_a_newer_sglang_than_its_image_says_so_until_the_image_matches() -> None:
    p = plan({"platform": "mi355x", "tp": 8, "sglang_version": "0.5.23"})
    assert p.ok and "image-version-differs" in {w.id for w in p.warnings}
    image = "lmsysorg/sglang:v0.5.23-rocm700-mi35x"  # what a user would pass; not a published tag here
    matched = plan({"platform": "mi355x", "tp": 8, "sglang_version": "0.5.23", "docker_image": image})
    assert "image-version-differs" not in {w.id for w in matched.warnings}
    assert matched.docker_argv is not None and image in matched.docker_argv and matched.docker_image == image
    assert "image-version-differs" not in {w.id for w in plan({"platform": "mi355x"}).warnings}
