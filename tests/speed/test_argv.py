"""Scenario -> bench_serving argv: every scenario field lands on its flag, offline rules hold."""

from __future__ import annotations

import warnings

import pytest

from kimi_runbooks import speed
from kimi_runbooks.catalog import Scenario
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.target.locate import RunHandle

ROOT = REPO_ROOT


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def test_every_catalog_scenario_builds(catalog):
    for sc in catalog.scenarios.values():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            generated = sc.trace is not None or sc.arrival == "constant"  # the runner writes it (traces, arrivals)
            trace = "trace.json" if generated else None
            argv = speed.build_argv(
                sc, "http://127.0.0.1:30000", output_file="o.jsonl", client=speed.BenchClient(dataset_path=trace)
            )
        assert argv[:3] == ["python3", "-m", "sglang.bench_serving"]
        if trace:
            assert _flag(argv, "--dataset-path") == trace and "--flush-cache" in argv
            assert "--cache-report" in argv or sc.trace is None
        assert _flag(argv, "--num-prompts") == str(sc.num_prompts)
        assert _flag(argv, "--backend") == sc.backend
        sessions = sc.dataset == "mooncake" and sc.backend == "sglang-oai-chat"  # replayed as sessions
        name = "mooncake" if sc.arrival == "constant" else "agentic-trace" if sessions else sc.dataset
        assert _flag(argv, "--dataset-name") == name
        assert argv[-2:] == ["--output-file", "o.jsonl"]
        if sc.max_concurrency:
            assert _flag(argv, "--max-concurrency") == str(sc.max_concurrency)
        for flag in sc.extra_args:
            assert flag in argv


def test_cookbook_argv_matches_published_command(catalog):
    """The printed seed command's flags all appear with the same values."""
    cmd = (ROOT / "tests/fixtures/bench_blocks/cookbook-k26-h200__chat-1k1k-c16.cmd").read_text()
    published = cmd.replace("\\\n", " ").split()
    argv = speed.build_argv(
        catalog.scenario("chat-1k1k-c16"),
        RunHandle(base_url="http://127.0.0.1:30000", model="moonshotai/Kimi-K2.6", launcher="external"),
        output_file="o.jsonl",
    )
    for i, word in enumerate(published):
        if word.startswith("--"):
            assert _flag(argv, word) == published[i + 1], word


def test_target_forms_seed_tokenizer_prefix(catalog):
    sc = catalog.scenario("smoke-random-ids-c4")
    argv = speed.build_argv(
        sc,
        {"host": "10.0.0.2", "port": 8000, "model": "m"},
        output_file="f",
        client=speed.BenchClient(python="python3.11", command_prefix=["docker", "exec", "ctr"], tokenizer="/tok"),
    )
    assert argv[:5] == ["docker", "exec", "ctr", "python3.11", "-m"]
    assert (_flag(argv, "--host"), _flag(argv, "--port"), _flag(argv, "--model")) == ("10.0.0.2", "8000", "m")
    assert "--base-url" not in argv
    assert _flag(argv, "--tokenizer") == "/tok"
    assert _flag(argv, "--seed") == "1"  # the scenario's own seed wins
    assert _flag(argv, "--warmup-requests") == "1"
    assert _flag(argv, "--random-range-ratio") == "1"
    unseeded = catalog.scenario("chat-1k1k-c1")
    assert "--seed" not in speed.build_argv(unseeded, "http://h:1", output_file="f")
    assert (
        _flag(speed.build_argv(unseeded, "http://h:1", output_file="f", client=speed.BenchClient(seed=7)), "--seed")
        == "7"
    )


def test_offline_random_becomes_random_ids_with_warning(catalog):
    sc = catalog.scenario("chat-1k1k-c1")
    with pytest.warns(speed.OfflineDatasetWarning, match="random-ids"):
        argv = speed.build_argv(sc, "http://h:1", output_file="f", client=speed.BenchClient(offline=True))
    assert _flag(argv, "--dataset-name") == "random-ids"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _flag(speed.build_argv(sc, "http://h:1", output_file="f"), "--dataset-name") == "random"


def test_offline_sharegpt_needs_a_local_file(catalog):
    sc = catalog.scenario("sharegpt-c1")
    with pytest.raises(speed.BenchConfigError, match="dataset_path"):
        speed.build_argv(sc, "http://h:1", output_file="f", client=speed.BenchClient(offline=True))
    argv = speed.build_argv(
        sc, "http://h:1", output_file="f", client=speed.BenchClient(offline=True, dataset_path="/data/sg.json")
    )
    assert _flag(argv, "--dataset-path") == "/data/sg.json"
    assert "--random-input-len" not in argv


def test_api_key_never_on_argv(monkeypatch, catalog):
    monkeypatch.setenv("MY_KEY", "sk-very-secret")
    handle = RunHandle(base_url="http://h:1", model="m", launcher="external", api_key_env="MY_KEY")
    argv = speed.build_argv(catalog.scenario("smoke-random-ids-c1"), handle, output_file="f")
    assert "sk-very-secret" not in " ".join(argv)


def test_random_without_lengths_is_a_clear_error():
    sc = Scenario(id="x", dataset="random", num_prompts=1)
    with pytest.raises(speed.BenchConfigError, match="Fix"):
        speed.build_argv(sc, "http://h:1", output_file="f")
