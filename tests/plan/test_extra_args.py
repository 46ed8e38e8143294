"""Issue 13 case 6: `--extra-arg` is parsed as SGLang parses it and the rules see the result."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import ValidationError

from kimi_runbooks.catalog.flags import KNOB_OWNED, flag_value, knob_of, parse_extra_args
from kimi_runbooks.plan import plan


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kimi_runbooks.cli", "plan", *args], capture_output=True, text=True, timeout=60
    )


def ids(launch: object) -> set[str]:
    return {r.id for r in launch.results}  # type: ignore[attr-defined]


def test_tp_as_extra_arg_on_mi350x_hits_the_aiter_and_devices_rules_and_names_the_knob() -> None:
    proc = cli("--platform", "mi350x", "--extra-arg=--tp-size=16")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "amd-aiter-mla-heads" in proc.stderr and "devices-match" in proc.stderr
    assert "use --tp 16 (knob tp), not --extra-arg --tp-size=16" in proc.stderr


def test_mem_fraction_as_extra_arg_hits_the_range_rule() -> None:
    proc = cli("--platform", "h200", "--extra-arg=--mem-fraction-static=1.7")
    assert proc.returncode == 2 and "mem-fraction-range" in proc.stderr
    assert "use --mem-fraction-static 1.7 (knob mem_fraction_static)" in proc.stderr


def test_host_as_extra_arg_hits_the_bind_all_warning() -> None:
    launch = plan({"platform": "h200", "extra_args": ["--host=0.0.0.0"]})
    assert "bind-all-without-key" in {w.id for w in launch.warnings}
    assert "extra-arg-is-knob" in {e.id for e in launch.errors}
    assert launch.argv.count("--host") == 1 and launch.argv[launch.argv.index("--host") + 1] == "0.0.0.0"


def test_the_last_occurrence_wins_in_both_spellings() -> None:
    launch = plan({"platform": "h200", "extra_args": ["--tp-size=8", "--tensor-parallel-size", "4"]})
    assert "weights-fit" in ids(launch)  # tp 4 on H200s: the later value is the one judged
    assert launch.argv.count("--tp") == 1 and launch.argv[launch.argv.index("--tp") + 1] == "4"
    assert launch.memory.weights_gib_per_device == plan({"platform": "h200", "tp": 4}).memory.weights_gib_per_device


@pytest.mark.parametrize(
    "flag", ["--mem-frac=0.5", "--tp", "--model=x", "--served-model-name=x", "--trust-remote-code"]
)
def test_every_spelling_and_prefix_of_a_knob_flag_is_refused(flag: str) -> None:
    launch = plan({"platform": "h200", "extra_args": flag.split(" ") + (["8"] if flag == "--tp" else [])})
    assert "extra-arg-is-knob" in {e.id for e in launch.errors}, flag


def test_unknown_flags_pass_through_once_with_their_last_value() -> None:
    extra = ["--chunked-prefill-size", "4096", "--enable-metrics", "--chunked-prefill-size=8192", "--offset=-5"]
    launch = plan({"platform": "h200", "extra_args": extra})
    assert launch.ok, [str(e) for e in launch.errors]
    argv = launch.argv
    assert argv.count("--chunked-prefill-size") == 1 and argv[argv.index("--chunked-prefill-size") + 1] == "8192"
    assert argv.count("--enable-metrics") == 1  # in place: SGLang reads one value per flag, order aside
    assert argv[argv.index("--offset") + 1] == "-5"


def test_a_value_that_looks_like_a_flag_stays_attached() -> None:
    launch = plan({"platform": "h200", "extra_args": ["--json-model-override-args=--x"]})
    assert "--json-model-override-args=--x" in launch.argv


def test_extra_arg_replaces_a_flag_the_plan_already_emits() -> None:
    launch = plan({"platform": "h200", "speculative": True, "extra_args": ["--speculative-num-steps=5"]})
    argv = launch.argv
    assert argv.count("--speculative-num-steps") == 1 and argv[argv.index("--speculative-num-steps") + 1] == "5"


def test_speculative_given_as_extra_arg_is_judged_as_speculative() -> None:
    launch = plan({"platform": "mi350x", "extra_args": ["--speculative-algorithm", "EAGLE3"]})
    assert "eagle3-not-on-amd" in {e.id for e in launch.errors}


def test_the_key_is_never_an_extra_arg_nor_echoed() -> None:
    for flag in ("--api-key=sk-secret-123", "--api-k=sk-secret-123"):
        with pytest.raises(ValidationError) as info:
            plan({"platform": "h200", "extra_args": [flag]})
        assert "api_key_env" in str(info.value)
        assert all("sk-secret-123" not in e["msg"] for e in info.value.errors())


def test_a_bad_knob_value_is_reported_not_raised() -> None:
    launch = plan({"platform": "h200", "extra_args": ["--tp-size=eight"]})
    assert {"extra-arg-is-knob", "extra-arg-value"} <= {e.id for e in launch.errors}


def test_deployments_fold_extra_args_into_every_role() -> None:
    launch = plan(
        {
            "platform": "ascend-a3",
            "deployment": "ascend-a3-1p1d-16p-in128k-out1k",
            "extra_args": ["--enable-metrics", "--max-running-requests=4", "--mem-fraction-static=1.5"],
        }
    )
    errors = [e for e in launch.errors if e.id == "mem-fraction-range"]
    assert {e.role for e in errors} == {"prefill", "decode"}
    for node in launch.nodes:
        assert node.argv.count("--enable-metrics") == 1
        assert node.argv.count("--max-running-requests") == 1
        assert node.argv[node.argv.index("--max-running-requests") + 1] == "4"


def test_parse_extra_args_groups_values_with_their_flag() -> None:
    leading, flags = parse_extra_args(["x", "--a=1", "--b", "2", "3", "--c", "-1"])
    assert leading == ["x"]
    assert [(f.flag, f.values) for f in flags] == [("--a", ("1",)), ("--b", ("2", "3")), ("--c", ("-1",))]


@pytest.mark.heavy
def test_knob_spellings_agree_with_sglangs_own_parser(require_tool_env: object) -> None:
    """Every option string SGLang gives a knob's destination resolves to that knob here; no other
    SGLang option is a prefix of a knob's spelling (so a prefix is never wrongly refused); our
    KV dtype list is SGLang's --kv-cache-dtype choices; and a plan's argv, parsed by SGLang's
    parser, holds the values the rules judged."""
    env = require_tool_env("bench")  # type: ignore[operator]
    launch = plan({"platform": "h200", "extra_args": ["--enable-metrics", "--chunked-prefill-size=8192"], "tp": 8})
    script = (
        "import argparse, json, sys\n"
        "from sglang.srt.server_args import ServerArgs\n"
        "p = argparse.ArgumentParser()\n"
        "ServerArgs.add_cli_args(p)\n"
        "opts = {o: a.dest for a in p._actions for o in a.option_strings}\n"
        "choices = [a.choices for a in p._actions if a.dest == 'kv_cache_dtype'][0]\n"
        "ns = vars(p.parse_args(json.loads(sys.argv[1])))\n"
        "print(json.dumps({'opts': opts, 'kv': list(choices), 'parsed': {k: ns[k] for k in sys.argv[2:]}}))\n"
    )
    argv = launch.argv[2:]  # after `sglang serve`
    keys = ["tp_size", "mem_fraction_static", "chunked_prefill_size", "enable_metrics", "host", "port"]
    proc = subprocess.run(
        [str(env.python), "-c", script, json.dumps(argv), *keys], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    opts: dict[str, str] = data["opts"]
    dest_of_knob = {
        "model_path": "model_path",
        "tp": "tp_size",
        "dp": "dp_size",
        "ep": "ep_size",
        "pp": "pp_size",
        "kv_cache_dtype": "kv_cache_dtype",
        "mem_fraction_static": "mem_fraction_static",
        "context_length": "context_length",
        "host": "host",
        "port": "port",
        "api_key_env": "api_key",
        "draft_model_path": "speculative_draft_model_path",
    }
    for option, dest in opts.items():
        knob = next((k for k, d in dest_of_knob.items() if d == dest), None)
        if knob is not None:
            owner = knob_of(option)
            assert owner is not None and owner[1].knob == knob, option
    owned = {o for o, d in opts.items() if knob_of(o) is not None}
    for option, dest in opts.items():
        if knob_of(option) is None:
            assert not any(s.startswith(option) for s in owned), f"{option} ({dest}) is a prefix of a knob flag"
    from kimi_runbooks.plan.memory import KV_CACHE_DTYPES

    assert sorted(data["kv"]) == sorted(KV_CACHE_DTYPES)
    parsed = data["parsed"]
    assert parsed["tp_size"] == 8 and parsed["chunked_prefill_size"] == 8192 and parsed["enable_metrics"] is True
    assert parsed["host"] == launch.serve_host and parsed["port"] == launch.serve_port
    assert set(KNOB_OWNED) >= {"--tp", "--host", "--port", "--mem-fraction-static"}


def test_flag_value_reads_both_spellings_the_first_wins_and_a_trailing_flag_has_none():
    argv = ["sglang", "serve", "--tp", "8", "--context-length=4096", "--tp", "4", "--enable-metrics"]
    assert flag_value(argv, "--tp") == "8" and flag_value(argv, "--context-length") == "4096"
    assert flag_value(argv, "--enable-metrics") is None and flag_value(argv, "--missing") is None
