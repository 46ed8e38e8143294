"""A real agent framework against the emulator (issue 27 item 5): pydantic-ai-slim 2.68.0 from PyPI,
in the `agents` tool env, running src/kimi_runbooks/tools/scripts/agent_loop.py as a subprocess.

The agent has a get_weather tool and must end with a WeatherReport (a pydantic model):

* default output (ToolOutput): pydantic-ai sends tool_choice="required" with its final_result tool
  on every turn; the run is get_weather -> its result -> final_result, which needs the server to
  force a call after a tool result (SGLang does; the `tool-choice-ignored` fault does not, and
  the agent then fails);
* NativeOutput: a tool loop with text output (get_weather -> result -> text), then the report by
  response_format json_schema with that history; the `response-format-ignored` fault answers free
  text and the agent's validation fails.

Each streamed (run_stream) and not (run). Heavy: skipped locally without the env, an error in CI.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.tools.envs import OFFLINE_ENV, ToolEnv

pytestmark = pytest.mark.heavy

MODEL = "moonshotai/Kimi-K2.6"
REPORT_KEYS = {"city", "temperature_c", "conditions"}
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])


@pytest.fixture(scope="module")
def agents(require_tool_env) -> ToolEnv:
    return require_tool_env("agents")


def run_agent(env: ToolEnv, base_url: str, output: str, stream: bool) -> tuple[int, dict[str, Any]]:
    """(exit code, the script's JSON report) of one agent run."""
    argv = env.argv("--base-url", base_url, "--model", MODEL, "--output", output, *(["--stream"] if stream else []))
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **OFFLINE_ENV},
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith("{"):
        pytest.fail(f"agent_loop.py printed no report (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.returncode, json.loads(lines[-1])


def _is_report(output: dict[str, Any]) -> None:
    assert set(output) == REPORT_KEYS
    assert isinstance(output["city"], str) and isinstance(output["conditions"], str)
    assert isinstance(output["temperature_c"], int | float)


@STREAM
def test_tool_loop_ends_in_the_final_result_tool(agents, stream):
    with emulator_server(time_scale=0.01) as base:
        code, report = run_agent(agents, base, "tool", stream)
    assert code == 0 and report["ok"], report.get("error")
    assert report["version"] == "2.68.0"
    calls = report["tool_calls"]
    assert [c["tool"] for c in calls] == ["get_weather", "final_result"]
    assert calls[0]["args"] == {"city": "Paris"}
    assert report["output"] == calls[1]["args"]  # the report is final_result's arguments
    _is_report(report["output"])
    # what pydantic-ai asked for: a forced call on the first turn and after the tool result
    assert [(s["tool_choice"], s["stream"]) for s in report["sent"]] == [("required", stream)] * 2
    assert all(s["tools"] == ["get_weather", "final_result"] and s["response_format"] is None for s in report["sent"])


@STREAM
def test_native_output_after_a_tool_loop(agents, stream):
    with emulator_server(time_scale=0.01) as base:
        code, report = run_agent(agents, base, "native", stream)
    assert code == 0 and report["ok"], report.get("error")
    assert [c["tool"] for c in report["tool_calls"]] == ["get_weather"]
    assert report["tool_calls"][0]["args"] == {"city": "Paris"}
    _is_report(report["output"])
    # the tool loop (call, then the text answer to its result), then the report by response_format
    assert [(s["tool_choice"], s["response_format"]) for s in report["sent"]] == [
        ("auto", None),
        ("auto", None),
        ("auto", "json_schema"),
    ]
    assert all(s["stream"] is stream for s in report["sent"])


@pytest.mark.parametrize(
    ("fault", "output"),
    [("tool-choice-ignored", "tool"), ("response-format-ignored", "native")],
    ids=["tool_choice-ignored", "response_format-ignored"],
)
@STREAM
def test_the_agent_fails_when_the_server_ignores_the_constraint(agents, fault, output, stream):
    with emulator_server(time_scale=0.01, fault=fault) as base:
        code, report = run_agent(agents, base, output, stream)
    assert code == 1 and not report["ok"]
    # pydantic-ai gives up after its retries: text where a final_result call was required, or
    # content that does not validate as a WeatherReport
    assert report["error"].startswith("UnexpectedModelBehavior"), report["error"]
    assert len(report["sent"]) > (2 if output == "tool" else 3)  # it retried before giving up
