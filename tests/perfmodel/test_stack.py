"""Issue 26 item 2: the software stack is an input (stack.py): read from a reference's `stack:` block
or its command, from a plan's flags, set with --stack; an unfitted stack predicts with a wider band."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
import yaml

from kimi_runbooks.catalog import load_catalog
from kimi_runbooks.perfmodel.observations import observations
from kimi_runbooks.perfmodel.predict import predict
from kimi_runbooks.perfmodel.spec import format_predictions, parse_predict_spec
from kimi_runbooks.perfmodel.stack import (
    STACK_KEYS,
    Speculative,
    Stack,
    StackError,
    parse_stack_spec,
    stack_from_dict,
    stack_from_launch,
)
from kimi_runbooks.perfmodel.store import load_calibration
from kimi_runbooks.plan.planner import plan

CATALOG = load_catalog()
BLOCK = {
    "image": "lmsysorg/sglang:v0.5.8-rocm700-mi35x",
    "sglang_version": "0.5.8",
    "attention_backend": "aiter",
    "moe_path": "flydsl",
    "precision": "W4A8",
    "torch_compile": False,
    "cuda_graphs": True,
    "speculative": {"algorithm": "EAGLE3", "accept_length": 2.9},
    "pp": 1,
    "tuned": False,
}


def test_the_stack_block_has_exactly_the_shared_keys() -> None:
    stack = stack_from_dict(BLOCK)
    assert set(BLOCK) == set(STACK_KEYS)
    assert stack.speculative == Speculative("EAGLE3", 2.9)
    assert stack.moe_key() == "flydsl:W4A8" and stack.attention_key("amd") == "amd:aiter"
    with pytest.raises(StackError, match="unknown keys"):
        stack_from_dict({**BLOCK, "moe": "flydsl"})
    with pytest.raises(StackError, match="moe_path 'fly' is not one of"):
        stack_from_dict({**BLOCK, "moe_path": "fly"})


def test_a_reference_without_a_block_has_its_stack_read_from_its_command() -> None:
    by_ref = {o.reference_id: o.stack for o in observations(CATALOG)}
    assert by_ref["rocm-blog-k25-mi300x"].attention_backend == "aiter"  # --attention-backend aiter
    assert by_ref["rocm-blog-k25-mi300x"].precision == "W4A16"  # the int4 checkpoint
    rtx = by_ref["llmib-rtx-pro-6000-k26-nvfp4"]
    assert (rtx.moe_path, rtx.attention_backend, rtx.precision) == ("flashinfer_cutlass", "triton", "FP4")
    assert by_ref["deplodock-k25-nvfp4-b200"].sglang_version == "0.5.9"
    assert by_ref["cookbook-k26-h200"].moe_path is None  # not shown by the command: null, not guessed


def test_new_references_with_a_stack_block_and_held_out_load(tmp_path: Path) -> None:
    params = tmp_path / "params"
    shutil.copytree(CATALOG.root, params)
    path = params / "references" / "speed-rocm-blog-k25-mi300x.yaml"
    data = yaml.safe_load(path.read_text())
    data["stack"] = BLOCK
    data["held_out"] = True
    for row in data["rows"]:  # the page's tuned rows carry their own stack; this checks the file's block
        (row.get("launch") or {}).pop("stack", None)
    path.write_text(yaml.safe_dump(data))
    obs = [o for o in observations(load_catalog(params)) if o.reference_id == "rocm-blog-k25-mi300x"]
    assert obs and all(o.stack == stack_from_dict(BLOCK) for o in obs)
    assert all(o.held_out and not o.fit for o in obs)  # held out: never fitted
    assert all(o.published_on == "2026-03-24" for o in obs)


def test_launch_flags_and_the_stack_option() -> None:
    argv = [
        "--attention-backend",
        "fa3",
        "--enable-torch-compile",
        "--pp-size",
        "2",
        "--speculative-algorithm",
        "EAGLE3",
    ]
    stack = stack_from_launch(argv, "lmsysorg/sglang:v0.5.9-cu129", "int4")
    assert (stack.attention_backend, stack.torch_compile, stack.pp, stack.sglang_version) == ("fa3", True, 2, "0.5.9")
    assert stack.speculative == Speculative("EAGLE3", None) and stack.precision == "W4A16"
    set_ = parse_stack_spec("moe_path=flydsl,precision=W4A8,accept_length=2.9,tuned=true", stack)
    assert (set_.moe_path, set_.precision, set_.tuned, set_.speculative) == (
        "flydsl",
        "W4A8",
        True,
        Speculative("EAGLE3", 2.9),
    )
    for bad, rule in (("moe=x", "unknown keys"), ("pp=two", "whole number"), ("flydsl", "key=value")):
        with pytest.raises(StackError, match=rule):
            parse_stack_spec(bad)


def test_a_tuned_amd_stack_no_reference_ran_says_so_and_widens_the_band() -> None:
    cal = load_calibration(CATALOG.root)
    launch = plan({"platform": "mi350x", "tp": 4}, CATALOG)
    scenarios = parse_predict_spec("in=1000,out=1000,c=40")
    (plain,) = predict(launch, scenarios, cal)
    tuned = parse_stack_spec("moe_path=flydsl,precision=W4A8,torch_compile=true")
    (p,) = predict(launch, scenarios, cal, stack=tuned)
    assert p.calibration_basis == "unfitted-stack" and not p.calibrated_family
    # no reference ran an untuned FlyDSL kernel (the pages' is tuned): its terms are unfitted; the
    # per-layer cost is the graph-replay term every family fits (torch.compile is captured in graphs)
    assert "stack.moe_kernel[flydsl:W4]" in p.unfitted_terms and not any("overhead_us" in t for t in p.unfitted_terms)
    # nothing measured stands behind an unfitted stack: the widest tier's band, sized by page-out errors
    assert (p.pages, p.band_basis) == (0, "first principles")
    lo, hi = cal.band_by_support["first principles"]["median_tpot_ms"]
    assert p.high["median_tpot_ms"] == pytest.approx(max(p.median_tpot_ms * math.exp(-lo), p.median_tpot_ms))
    text = format_predictions([p])
    assert "UNFITTED STACK" in text and "flydsl:W4" in text and "moe_path=flydsl" in text
    # an untuned kernel borrows the measured untuned path of its weight format (the stock W4 MoE), and
    # says so; W4A16 and W4A8 on one kernel share its terms (Stack.kernel_key)
    assert p.borrowed["stack.moe_kernel[flydsl:W4]"] == ["stack.moe_kernel[default:W4]"]
    assert "stack.moe_kernel[flydsl:W4] (borrows stack.moe_kernel[default:W4])" in text
    (w4a16,) = predict(launch, scenarios, cal, stack=parse_stack_spec("moe_path=flydsl,precision=W4A16"))
    assert w4a16.unfitted_terms == p.unfitted_terms and w4a16.borrowed == p.borrowed
    # the tuned FlyDSL kernel the ROCm pages ran: its streaming term is fitted; a term of it the fit left
    # out stays at its prior, never at the stock path's value
    (fitted,) = predict(launch, scenarios, cal, stack=parse_stack_spec("moe_path=flydsl,precision=W4A8,tuned=true"))
    assert "stack.moe_kernel[flydsl:W4:tuned]" in cal.values
    assert "stack.moe_kernel[flydsl:W4:tuned]" not in fitted.unfitted_terms
    assert not any(term.endswith(":tuned]") for term in fitted.borrowed)
    assert plain.stack["moe_path"] is None and p.stack["moe_path"] == "flydsl"
    assert Stack().label() == "default:unknown"


def test_a_pipeline_no_reference_ran_and_a_precision_override_enter_the_prediction() -> None:
    cal = load_calibration(CATALOG.root)
    launch = plan({"platform": "mi350x", "tp": 4}, CATALOG)
    scenarios = parse_predict_spec("in=1000,out=1000,c=40")
    (pp2,) = predict(launch, scenarios, cal, stack=parse_stack_spec("pp=2"))
    assert pp2.calibration_basis == "unfitted-stack" and "stack.pipeline[pp2]" in pp2.unfitted_terms
    (plain,) = predict(launch, scenarios, cal)
    (w4a8,) = predict(launch, scenarios, cal, stack=parse_stack_spec("precision=W4A8"))
    assert w4a8.median_tpot_ms != plain.median_tpot_ms  # other stack terms and int8 expert GEMMs
