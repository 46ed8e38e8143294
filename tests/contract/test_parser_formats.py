"""Contract: the emulator under other parsers and reasoning controls answers as SGLang 0.5.23 does.

Two emulated models (test fixtures, tests/support/hybrid_models.py): a Kimi-K3-like one served
with ``--reasoning-parser kimi_k3 --tool-call-parser kimi_k3`` (always thinking, reasoning_effort
low/high/max, video) and a Kimi-K2.7-Code-like one with the kimi_k2 parsers and thinking forced.
For every accepted request the emulator's model output is written out raw, in the parser's format
(emulator/raw.py, formats.py), and replayed through SGLang's own HTTP server and serving layer with
those parsers (sglang_ref.py: serving_chat.py, parser/reasoning_parser.py KimiK3Detector /
KimiK2Detector, function_call/kimik3_detector.py / kimik2_detector.py); what SGLang answers must be
what the emulator answered, key for key and chunk for chunk. Refused requests (bad reasoning_effort,
bad video parts) are held to SGLang's refusal of the same body. Only the emulator's DEVIATIONS are
let through (none in strict mode).

Heavy: needs the bench tool env (bash scripts/setup_tool_env.sh bench).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from capture import exchange
from cases import TIME_TOOL, TOOL_RESULT_TURN, USER_HELLO, USER_PARALLEL, USER_WEATHER, WEATHER_TOOL, Case

from conftest import explain, run_in_bench_env
from kimi_runbooks.emulator import DEVIATIONS, EmulatorSettings
from kimi_runbooks.emulator.capabilities import ModelCapabilities
from kimi_runbooks.emulator.events import EOS_TOKEN_ID
from kimi_runbooks.emulator.raw import raw_chat_output
from kimi_runbooks.emulator.testing import run_in_thread
from tests.support.hybrid_models import k3_like, k27_code_like

pytestmark = pytest.mark.heavy
HERE = Path(__file__).resolve().parent
CONTEXT = 262144
VIDEO = {"type": "video_url", "video_url": {"url": "https://example.com/clip.mp4", "fps": 2, "max_frames": 8}}


def _body(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"messages": messages, "max_tokens": 400, **extra}


def _tools(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return _body(messages, tools=[WEATHER_TOOL, TIME_TOOL], **extra)


OFF = {"chat_template_kwargs": {"thinking": False}}
USAGE = {"stream_options": {"include_usage": True}}
SHARED_BODIES: dict[str, Any] = {
    "hello": _body(USER_HELLO),
    "thinking-off": _body(USER_HELLO, **OFF),
    "effort-none": _body(USER_HELLO, reasoning_effort="none"),
    "tool": _tools(USER_WEATHER),
    "tool-thinking-off": _tools(USER_WEATHER, **OFF),
    "parallel": _tools(USER_PARALLEL),
    "tool-result": _tools(TOOL_RESULT_TURN),
    "cut-reasoning": _body(USER_HELLO, max_tokens=4),
    "ignore-eos": _body(USER_HELLO, max_tokens=90, ignore_eos=True),
    "video": _body([{"role": "user", "content": [VIDEO, {"type": "text", "text": "What happens in this clip?"}]}]),
}
K3_BODIES: dict[str, Any] = {
    **{f"effort-{e}": _body(USER_HELLO, reasoning_effort=e) for e in ("low", "high", "max", "medium", 0.5)},
    "effort-in-reasoning-object": _body(USER_HELLO, reasoning={"effort": "low"}),
    "effort-thinking-off": _tools(USER_WEATHER, reasoning_effort="low", **OFF),
}
REFUSED: dict[str, Any] = {
    "effort-bool": _body(USER_HELLO, reasoning_effort=True),
    "effort-out-of-range": _body(USER_HELLO, reasoning_effort=1.5),
    "effort-unknown-word": _body(USER_HELLO, reasoning_effort="extreme"),
    "video-part-without-url": _body([{"role": "user", "content": [{"type": "video_url"}]}]),
    "video-fps-zero": _body(
        [{"role": "user", "content": [{"type": "video_url", "video_url": {"url": "x", "fps": 0}}]}]
    ),
    "video-url-missing": _body([{"role": "user", "content": [{"type": "video_url", "video_url": {"fps": 1}}]}]),
}

MODELS = {
    "k3": (k3_like(), {"model_type": "kimi_k3", "architectures": ["KimiK3ForConditionalGeneration"]}),
    "k27-code": (k27_code_like(), None),
}


def settings_for(model_key: str, strict: bool) -> EmulatorSettings:
    model, _ = MODELS[model_key]
    return EmulatorSettings(
        time_scale=0.01,
        log_startup=False,
        seed=5,
        model=model.served_name,
        max_model_len=CONTEXT,
        strict_sglang=strict,
        capabilities=ModelCapabilities.from_model(model),
        launch_args={"reasoning_parser": model.default_reasoning_parser, "tool_call_parser": model.tool_call_parser},
    )


def cut_bodies(model_key: str) -> dict[str, Any]:
    """max_tokens cuts placed on this model's own tool-call turn: in its reasoning, on the call's
    header, mid-arguments, one token short of the call's end, and exactly at its end."""
    settings = settings_for(model_key, strict=False)
    model, _ = MODELS[model_key]
    body = {"model": model.served_name, **_tools(USER_WEATHER)}
    raw = raw_chat_output(settings, body)["choices"][0]
    thinking, total = raw["reasoning_tokens"], len(raw["pieces"])
    cuts = sorted({thinking // 2, thinking + 1, thinking + 3, total - 1, total})
    return {f"tool-cut-{n}": _tools(USER_WEATHER, max_tokens=n) for n in cuts}


def cases_for(model_key: str) -> list[Case]:
    model, _ = MODELS[model_key]
    bodies = {**SHARED_BODIES, **cut_bodies(model_key), **(K3_BODIES if model.reasoning_effort else {})}
    out = []
    for name, body in bodies.items():
        full = {"model": model.served_name, **body}
        out.append(Case(name, "chat", "POST", "/v1/chat/completions", full))
        out.append(
            Case(f"{name}-stream", "chat-stream", "POST", "/v1/chat/completions", {**full, "stream": True, **USAGE})
        )
    for name, body in REFUSED.items():
        out.append(Case(name, "chat", "POST", "/v1/chat/completions", {"model": model.served_name, **body}))
    return out


def capture_model(model_key: str, out: Path, strict: bool) -> dict[str, Any]:
    settings = settings_for(model_key, strict)
    model, hf_config = MODELS[model_key]
    url, stop = run_in_thread(settings)
    records = []
    try:
        with httpx.Client(base_url=url, timeout=60.0) as client:
            for case in cases_for(model_key):
                record = exchange(client, case)
                if record["response"]["status"] == 200:
                    record["raw"] = raw_chat_output(settings, case.body)
                records.append(record)
    finally:
        stop()
    data = {
        "strict": strict,
        "emulator": {
            "model": model.served_name,
            "context_length": CONTEXT,
            "api_key": "unused",
            "eos_token_id": EOS_TOKEN_ID,
            "deviations": [] if strict else [d.as_dict() for d in DEVIATIONS],
            "reasoning_parser": model.default_reasoning_parser,
            "tool_call_parser": model.tool_call_parser,
            "hf_config": hf_config,
            "multimodal": model.multimodal,
        },
        "exchanges": records,
    }
    out.write_text(json.dumps(data, indent=1, ensure_ascii=False))
    return data


def judge(bench_python: str, model_key: str, out_dir: Path, strict: bool = False) -> tuple[dict[str, Any], Any]:
    captured_path = out_dir / f"captured-{model_key}.json"
    captured = capture_model(model_key, captured_path, strict)
    report_path = out_dir / f"report-{model_key}.json"
    return run_in_bench_env(bench_python, "sglang_check.py", captured_path, report=report_path), captured


@pytest.mark.parametrize("model_key", sorted(MODELS))
def test_parsed_output_matches_sglang(bench_python: str, tmp_path: Path, model_key: str) -> None:
    report, captured = judge(bench_python, model_key, tmp_path)
    assert report["sglang_version"] == report["expected_sglang"]
    assert set(report["cases"]) == {c.id for c in cases_for(model_key)}
    statuses = {e["id"]: e["response"]["status"] for e in captured["exchanges"]}
    assert all(statuses[name] == 400 for name in REFUSED), statuses  # refusals are refusals, not 200s
    assert all(statuses[c.id] == 200 for c in cases_for(model_key) if c.id not in REFUSED), statuses
    assert not report["mismatches"], explain(report)


def test_strict_k3_matches_with_no_deviation(bench_python: str, tmp_path: Path) -> None:
    report, _ = judge(bench_python, "k3", tmp_path, strict=True)
    assert report["deviations"] == []
    assert not report["mismatches"], explain(report)
