"""Issue 13 case 8: bad input exits 2 with the field and the fix, never a traceback; rules are
checked when params/ loads, and a rule that still fails on a plan never crashes `plan`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from kimi_runbooks.catalog import Rule, load_catalog
from kimi_runbooks.catalog.expression import FACT_NAMES, expression_problems
from kimi_runbooks.paths import PARAMS_DIR
from kimi_runbooks.plan import PlanConfig, plan
from kimi_runbooks.plan.rules import check_rules
from tests.support.addresses import IPV4_RULE, NUMERIC_NON_ADDRESSES


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--mem-fraction-static", "nan"], "mem_fraction_static"),
        (["--mem-fraction-static", "inf"], "mem_fraction_static"),
        (["--mem-fraction-static=-inf"], "mem_fraction_static"),
        (["--kv-cache-dtype", "fp16"], "kv_cache_dtype"),
        (["--kv-cache-dtype", "int3"], "kv_cache_dtype"),
        (["--sglang-version", "banana"], "sglang_version"),
        (["--env", "A B=1"], "env"),
        (["--env", "NOEQUALS"], "--env"),
    ],
)
def test_bad_values_exit_2_with_the_field_and_the_fix(args: list[str], field: str) -> None:
    proc = cli("plan", "--platform", "h200", *args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert field in proc.stderr and "Fix" in proc.stderr


def test_plan_config_refuses_non_finite_fractions_and_unknown_kv_dtypes() -> None:
    for value in (float("nan"), float("inf")):
        with pytest.raises(ValidationError, match="must be a number in"):
            PlanConfig(platform="h200", mem_fraction_static=value)
    with pytest.raises(ValidationError, match="fp8_e4m3"):
        PlanConfig(platform="h200", kv_cache_dtype="int3")


@pytest.mark.parametrize("dtype", ["auto", "bf16", "bfloat16", "fp8_e4m3", "fp8_e5m2"])
def test_every_accepted_kv_dtype_plans(dtype: str) -> None:
    launch = plan({"platform": "h200", "kv_cache_dtype": dtype})
    assert launch.memory.kv_bytes_per_token > 0


def test_fp4_kv_needs_fp4_hardware() -> None:
    assert "fp4-kv-needs-fp4" in {e.id for e in plan({"platform": "h200", "kv_cache_dtype": "nvfp4"}).errors}
    b200 = plan({"platform": "b200", "kv_cache_dtype": "nvfp4"})
    assert b200.ok and "kv-dtype-mla-unverified" in {w.id for w in b200.warnings}
    fp8 = plan({"platform": "b200", "kv_cache_dtype": "fp8_e4m3"}).memory
    assert b200.memory.kv_bytes_per_token < fp8.kv_bytes_per_token


def _params_with_rule(tmp_path: Path, rule: dict[str, object]) -> Path:
    params = tmp_path / "params"
    shutil.copytree(PARAMS_DIR, params)
    extra = {"rules": [{"severity": "error", "message": "m", "fix": "f", "source": "s", **rule}]}
    (params / "rules" / "zz-broken.yaml").write_text(yaml.safe_dump(extra))
    return params


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ({"id": "typo-fact", "violation": "tpp > 1"}, "unknown fact 'tpp'"),
        ({"id": "no-parse", "violation": "tp >"}, "cannot parse"),
        ({"id": "not-allowed", "violation": "__import__('os')"}, "is not allowed"),
        ({"id": "bad-placeholder", "violation": "tp > 64", "message": "tp is {tpp}"}, "unknown fact '{tpp}'"),
    ],
)
def test_validate_params_checks_every_rule_expression_and_fact(
    tmp_path: Path, rule: dict[str, object], problem: str
) -> None:
    params = _params_with_rule(tmp_path, rule)
    proc = cli("validate-params", "--params-dir", str(params))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "zz-broken.yaml" in proc.stderr and problem in proc.stderr
    proc = cli("plan", "--platform", "h200", env={"KIMI_RUNBOOKS_PARAMS": str(params)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and problem in proc.stderr


def test_a_rule_that_fails_on_a_plan_is_an_error_result_not_a_crash() -> None:
    catalog = load_catalog()
    broken = Rule(
        id="compares-text-to-number",
        severity="warning",
        violation="kv_cache_dtype > 3",
        message="m",
        fix="f",
        source="s",
    )
    launch = plan({"platform": "h200"})
    facts = {name: None for name in FACT_NAMES} | {"vendor": "nvidia", "arch": "hopper", "platform": "h200"}
    facts |= {"model": "kimi-k2.6", "sglang_version": "0.5.9", "kv_cache_dtype": "auto"}
    (result,) = check_rules([broken], facts)
    assert result.id == "rule-cannot-be-evaluated" and result.severity == "error"
    assert "compares-text-to-number" in result.message and "validate-params" in result.fix
    assert launch.ok and catalog.rules


def test_the_fact_names_are_the_facts_the_planner_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    from kimi_runbooks.plan import server_rules

    seen: list[set[str]] = []
    original = server_rules.rule_facts

    def spy(*args: object, **kwargs: object) -> dict[str, object]:
        facts = original(*args, **kwargs)  # type: ignore[arg-type]
        seen.append(set(facts))
        return facts

    monkeypatch.setattr("kimi_runbooks.plan.server_rules.rule_facts", spy)
    plan({"platform": "h200"})
    plan({"platform": "ascend-a3"})
    assert seen and all(names == set(FACT_NAMES) for names in seen)


def test_every_shipped_rule_passes_the_static_check() -> None:
    for rule in load_catalog().rules:
        assert expression_problems(rule.violation) == [], rule.id


def test_a_recipe_extra_arg_that_sets_a_knob_fails_at_load(tmp_path: Path) -> None:
    params = tmp_path / "params"
    shutil.copytree(PARAMS_DIR, params)
    path = params / "platforms" / "rtx-pro-6000.yaml"
    data = yaml.safe_load(path.read_text())
    data["recipe"]["extra_args"] += ["--tp-size", "4"]
    path.write_text(yaml.safe_dump(data))
    proc = cli("validate-params", "--params-dir", str(params))
    assert proc.returncode == 2 and "rtx-pro-6000.yaml" in proc.stderr and "('--tp-size', 'tp')" in proc.stderr


HOSTILE = "; rm -rf /"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--host", "0.0.0.0" + HOSTILE], "host"),
        (["--host", "$(touch p)"], "host"),
        (["--nnodes", "2", "--node-ip", "1.2.3.4;touch p", "--node-ip", "1.2.3.5"], "node_ips[0]"),
        (["--docker-image", "img;touch p"], "docker_image"),
        (["--docker-image", "Lmsysorg/sglang:v0.5.9"], "docker_image"),
        (["--port", "0"], "port"),
        (["--port", "70000"], "port"),
        (["--extra-arg=--host=0.0.0.0" + HOSTILE], "--host"),
    ],
)
def test_hostile_or_malformed_inputs_exit_2_and_no_text_echoes_them(args: list[str], field: str) -> None:
    """Issue 25 item 6: these gave VALID plans with exit 0 (quoted, so nothing ran, but never checked),
    and the planner's own fix text for the --extra-arg case suggested --host '0.0.0.0; rm -rf /'."""
    proc = cli("plan", "--platform", "h200", *args)
    assert proc.returncode == 2, proc.stdout[-2000:]
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out and field in out and "Fix" in out
    for hostile in ("rm -rf", "touch p", "$(touch"):
        assert hostile not in out, hostile


@pytest.mark.parametrize(
    "args",
    [
        ["--model", "kimi-k2.6", "--node-ip", "999.1.1.1"],
        ["--host", "256.256.256.256"],
        ["--host", "1.2.3"],
    ],
)
def test_plan_refuses_numeric_values_that_are_no_ip_address(args: list[str]) -> None:
    """Issue 40 item 3: these planned VALID (docker form `-p 999.1.1.1:30000:30000`)."""
    proc = cli("plan", "--platform", "h200", *args)
    assert proc.returncode == 2, proc.stdout[-2000:]
    assert IPV4_RULE in proc.stderr and "Fix" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("field", ["host", "node_ips", "prefill_ip", "decode_ip"])
@pytest.mark.parametrize("value", NUMERIC_NON_ADDRESSES)
def test_every_address_knob_uses_the_one_address_rule(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match=IPV4_RULE):
        PlanConfig(platform="ascend-a3", **{field: [value] if field == "node_ips" else value})


@pytest.mark.parametrize(
    "fields",
    [
        {"host": "::1"},
        {"host": "0.0.0.0"},
        {"host": "node0.cluster.local"},
        {"docker_image": "lmsysorg/sglang:v0.5.9-rocm700-mi35x"},
        {"docker_image": "registry.local:5000/team/sglang@sha256:" + "0" * 64},
        {"docker_image": "localhost/sglang"},
        {"nnodes": 2, "node_ips": ["10.0.0.1", "node1"]},
        {"port": 65535},
    ],
)
def test_well_formed_inputs_still_plan(fields: dict[str, object]) -> None:
    launch = plan({"platform": "h200", **fields})
    assert not [e for e in launch.errors if e.id != "weights-fit"], launch.errors


@pytest.mark.parametrize(
    ("field", "value"),
    [("ifname", "eth0;touch p"), ("prefill_ip", "10.0.0.1 && touch p"), ("decode_ip", "`touch p`")],
)
def test_plan_config_refuses_hostile_addresses_without_echoing_them(field: str, value: str) -> None:
    with pytest.raises(ValidationError) as err:
        PlanConfig(platform="ascend-a3", **{field: value})
    assert field in str(err.value) and "Fix" in str(err.value)
    assert "touch p" not in "; ".join(e["msg"] for e in err.value.errors())


def test_an_ipv6_host_is_published_in_dockers_bracket_form() -> None:
    launch = plan({"platform": "h200", "host": "::1"})
    assert launch.docker_argv is not None and "[::1]:30000:30000" in launch.docker_argv
