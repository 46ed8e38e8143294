"""speed.aiperf: AIPerf's command line, its per-request export, and the token comparison (no env needed)."""

from __future__ import annotations

import json

import pytest

from kimi_runbooks.speed.aiperf import TokenRecord, Workload, aiperf_env, disagreements, profile_args, read_records


def test_profile_args_streamed_asks_for_usage(tmp_path):
    args = profile_args(
        "http://h:1/", "m", tmp_path / "tok", tmp_path / "out", Workload(streaming=True, input_tokens=100)
    )
    assert args[:2] == ["profile", "--model"] and args[args.index("--url") + 1] == "http://h:1"
    assert args[args.index("--tokenizer") + 1] == str((tmp_path / "tok").resolve())
    assert args[args.index("--isl") + 1] == "100" and args[-1] == "--streaming"
    extra = json.loads(args[args.index("--extra-inputs") + 1])
    assert extra == {"ignore_eos": True, "stream_options": {"include_usage": True}}
    assert "--streaming" not in profile_args("http://h:1", "m", "t", "o")


def test_profile_args_refuse_bad_input():
    with pytest.raises(ValueError, match="endpoint must be"):
        profile_args("http://h", "m", "t", "o", Workload(endpoint="embeddings"))
    with pytest.raises(ValueError, match="at least 1"):
        profile_args("http://h", "m", "t", "o", Workload(requests=0))


def test_aiperf_env_drops_the_hub_offline_switches():
    env = aiperf_env({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PATH": "/bin"})
    assert env == {"PATH": "/bin"}


def _row(session, isl, osl, prompt=None, completion=None):
    metrics = {"input_sequence_length": {"value": isl}, "output_sequence_length": {"value": osl}}
    if prompt is not None:
        metrics["usage_prompt_tokens"] = {"value": prompt}
        metrics["usage_completion_tokens"] = {"value": completion}
    return json.dumps({"metadata": {"conversation_id": session}, "metrics": metrics})


def test_read_records_and_disagreements(tmp_path):
    failed = json.dumps({"metadata": {"conversation_id": "s9"}, "metrics": {}})
    lines = [_row("s0", 256, 32, 265, 32), _row("s1", 256, 32, 212, 32), _row("s2", 256, 30, 265, 32), failed]
    (tmp_path / "profile_export.jsonl").write_text("\n".join([*lines, _row("s3", 256, 32)]) + "\n")
    records = read_records(tmp_path)
    assert [r.session for r in records] == ["s0", "s1", "s2", "s3"]  # the failed request has no lengths
    found = disagreements(records, prompt_overhead=9)
    assert len(found) == 3
    assert found[0].startswith("s1: prompt of 256 tokens (+9 template) arrived as 212")
    assert found[1].startswith("s2: AIPerf counted 30 output tokens, the server 32")
    assert "reported no usage" in found[2]
    assert disagreements([TokenRecord("a", 1000, 10, 1009, 10)]) == []  # within 1 %
    assert disagreements([]) == ["no successful request was recorded: nothing to compare"]


def test_missing_export_names_the_cause(tmp_path):
    with pytest.raises(FileNotFoundError, match="export-level records"):
        read_records(tmp_path)
