"""The rule expression evaluator and version ranges."""

import pytest

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.plan.rules import RuleExpressionError, evaluate, parse_version


def test_arithmetic_and_logic():
    facts = {"tp": 8, "heads": 64, "vendor": "amd", "fmts": ("nvfp4",)}
    assert evaluate("(heads // tp) % 16 != 0 and vendor == 'amd'", facts) is True
    assert evaluate("'nvfp4' in fmts", facts) is True
    assert evaluate("not (0 < 0.5 < 1)", facts) is False
    assert evaluate("vendor.startswith('am')", facts) is True


@pytest.mark.parametrize("expr", ["__import__('os')", "open('x')", "tp.__class__", "[x for x in fmts]"])
def test_rejects_anything_but_the_whitelist(expr):
    with pytest.raises(RuleExpressionError):
        evaluate(expr, {"tp": 1, "fmts": ()})


def test_unknown_fact_is_named():
    with pytest.raises(RuleExpressionError, match="unknown fact 'nope'"):
        evaluate("nope > 1", {})


def test_versions_including_local_builds():
    assert parse_version("0.5.6.post3.dev11412+g964c45cf3") < parse_version("0.5.9")
    assert str(parse_version("v0.5.23-rocm700")) == "0.5.23"
    with pytest.raises(ValueError, match="cannot read SGLang version"):
        parse_version("latest")


def test_every_rule_has_a_source_and_parses():
    import ast

    for rule in load_catalog().rules:
        assert rule.source.strip(), rule.id
        ast.parse(rule.violation, mode="eval")


@pytest.mark.parametrize("platform", ["mi355x", "mi300x"])
def test_kimi_k27_code_on_amd_keeps_the_pages_tp_at_most_4(platform):
    """SGLang cookbook Kimi-K2.7-Code, AMD GPU TP Constraint: TP <= 4 on AMD, at any SGLang version
    (0.5.23's padded aiter backend would take 8 heads per GPU; the page does not)."""
    from kimi_runbooks.plan import plan

    tp8 = plan({"platform": platform, "model": "kimi-k2.7-code", "tp": 8, "sglang_version": "0.5.23"})
    assert not tp8.ok
    refused = [e for e in tp8.errors if e.id == "amd-k27-code-tp-at-most-4"]
    assert refused and "--tp 4" in refused[0].fix and "TP must be <= 4" in refused[0].message
    tp4 = plan({"platform": platform, "model": "kimi-k2.7-code", "tp": 4, "sglang_version": "0.5.23"})
    assert "amd-k27-code-tp-at-most-4" not in [e.id for e in tp4.errors]
    k26 = plan({"platform": platform, "model": "kimi-k2.6", "tp": 8, "sglang_version": "0.5.23"})
    assert "amd-k27-code-tp-at-most-4" not in [e.id for e in k26.errors]  # the page's rule, for its model


@pytest.mark.parametrize("platform", ["mi350x", "mi355x"])
@pytest.mark.parametrize("version", ["0.5.9", "0.5.23"])
def test_aiter_head_rules_concern_only_the_aiter_backend(platform, version):
    """Kimi-K3 at tp 8 has 12 heads per GPU, which the aiter MLA kernel refuses; the cookbook's MI35x
    cells run --attention-backend triton at tp 8, which that kernel never sees."""
    from kimi_runbooks.plan import plan

    base = {"platform": platform, "model": "kimi-k3", "tp": 8, "sglang_version": version}
    # the seed page had no MI35x cell: a generic plan, on the ROCm default unless told otherwise
    generic = {**base, "allow": ["no-verified-cookbook-cell"], "cookbook_revision": "seed"}
    triton = plan({**generic, "extra_args": ["--attention-backend", "triton"]})
    assert triton.ok, [str(e) for e in triton.errors]
    page_cell = plan(base)  # the newest page's cell carries --attention-backend triton itself
    assert page_cell.ok and "--attention-backend triton" in page_cell.command, [str(e) for e in page_cell.errors]
    aiter_rules = {"amd-aiter-mla-heads", "amd-aiter-mla-heads-padded"}
    cases = [(generic, []), (generic, ["--attention-backend", "aiter"]), (base, ["--attention-backend", "aiter"])]
    cases.append((base, ["--decode-attention-backend", "aiter"]))
    for config, extra in cases:
        aiter = plan({**config, "extra_args": extra})
        fired = [e for e in aiter.errors if e.id in aiter_rules]
        assert fired and "--attention-backend triton" in fired[0].fix, (config, extra)


@pytest.mark.parametrize(
    ("image", "known"),
    [
        ("lmsysorg/sglang:kimi-k3", "DarkSharpness/sglang-kimi fork"),
        ("lmsysorg/sglang:dev-rocm720-mi35x", "nightly build of SGLang's main branch"),
        ("lmsysorg/sglang:dev", "nightly build"),
    ],
)
def test_an_image_whose_tag_names_no_release_says_what_is_known(image, known):
    """The cookbook's current images name no release: the plan says what the tag tells and that the rules
    were judged at --sglang-version, instead of saying nothing (image_version is empty for them)."""
    from kimi_runbooks.plan import plan
    from kimi_runbooks.plan.image_release import image_release_note

    assert known in image_release_note(image) and image_release_note("lmsysorg/sglang:v0.5.9-rocm700-mi35x") == ""
    p = plan({"platform": "h200", "docker_image": image, "sglang_version": "0.5.23"})
    said = [w for w in p.warnings if w.id == "image-names-no-release"]
    assert (
        said and known in said[0].message and "SGLang 0.5.23" in said[0].message and "--sglang-version" in said[0].fix
    )
    released = plan({"platform": "h200", "docker_image": "lmsysorg/sglang:v0.5.23", "sglang_version": "0.5.23"})
    assert "image-names-no-release" not in [w.id for w in released.warnings]
