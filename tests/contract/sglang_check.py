"""Judge captured emulator exchanges against SGLang 0.5.23's own code; print the verdict as JSON.

Usage (the bench tool env's python, which has the real ``sglang`` package):

    .venvs/bench/bin/python tests/contract/sglang_check.py captured.json [report.json]

For each captured request the same request goes through SGLang's own HTTP server booted
in-process (sglang_ref.py), its engine replaying what the emulator generated (replay.py);
the two answers are diffed (compare.py). Surfaces whose values are the server's own are
checked for shape instead (surface_checks.py). Every chunk and body is also validated with
SGLang's pydantic classes and re-serialised the way SGLang serialises it. The emulator's
declared deviations (its ``DEVIATIONS`` constant, carried in the captured file) are the only
differences let through. Exit status 0 = no mismatch, 1 = mismatches (listed), 2 = the check
itself could not run.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import compare  # siblings: `python tests/contract/sglang_check.py` puts this folder on sys.path
import grammar_checks
import replay
import surface_checks

EXPECTED_SGLANG = "0.5.23"


def script_for(exchange: dict[str, Any], eos: int) -> dict[str, Any]:
    """The engine output to replay for this request, from what the emulator answered."""
    emu = exchange["response"]
    path = exchange["request"]["path"]
    script: dict[str, Any] = {"prompt_tokens": exchange.get("prompt_tokens"), "finals": [], "stream": []}
    if emu["status"] == 200 and exchange.get("raw"):  # the model's own raw output (emulator/raw.py)
        return replay.raw_script(exchange, eos)
    if emu["status"] != 200:
        return fallback_script(exchange, script, eos)
    events = emu.get("sse")
    body = compare.parse_body(emu["body"])
    if path == "/v1/chat/completions":
        if events is not None:
            script["stream"] = replay.chat_stream(exchange, events, eos)
        elif isinstance(body, dict):
            script["finals"] = replay.chat_finals(exchange, body, eos)
    elif path == "/v1/completions":
        if events is not None:
            script["stream"] = replay.completion_stream(exchange, events, eos)
        elif isinstance(body, dict):
            script["finals"] = replay.completion_finals(exchange, body, eos)
    elif path == "/generate":
        if events is not None:
            script["stream"] = replay.generate_stream(events)
        else:
            script["finals"] = replay.generate_finals(body)
    return script


def fallback_script(exchange: dict[str, Any], script: dict[str, Any], eos: int) -> dict[str, Any]:
    """A short stand-in generation for requests the emulator refused, so SGLang's answer to the
    same request (often a 200) is what the emulator's refusal is compared with."""
    body = replay.request_json(exchange)
    asked = body.get("n")
    n = asked if isinstance(asked, int) and 0 < asked <= 4 else 1
    pieces = ["Hello", "."]
    finish = {"type": "stop", "matched": eos}
    think = exchange["request"]["path"] == "/v1/chat/completions" and replay.thinking_on(body)
    if think:
        pieces = ["<think>ok", "</think>Hello", "."]
    finals: list[dict[str, Any]] = []
    stream: list[dict[str, Any]] = []
    for i in range(n):
        meta: dict[str, Any] = {
            "id": f"rid-{i}",
            "prompt_tokens": exchange.get("prompt_tokens") or 1,
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 1 if think else 0,
            "cached_tokens": 0,
        }
        finals.append(
            {
                "text": "".join(pieces),
                "output_ids": [0] * len(pieces),
                "meta_info": {**meta, "finish_reason": finish, "completion_tokens": len(pieces)},
            }
        )
        for k in range(len(pieces)):
            item: dict[str, Any] = {
                "text": "".join(pieces[: k + 1]),
                "output_ids": [0] * (k + 1),
                "meta_info": {
                    **meta,
                    "completion_tokens": k + 1,
                    "finish_reason": finish if k == len(pieces) - 1 else None,
                },
            }
            if n > 1:
                item["index"] = i
            stream.append(item)
    return {**script, "finals": finals, "stream": stream}


def _sse_content_path(event: dict[str, Any]) -> bool:
    """Chunks serving_chat builds with sse_utils.build_sse_content (role/content/reasoning/finish);
    tool-call and usage chunks go through ChatCompletionStreamResponse.model_dump_json."""
    choices = event.get("choices") or []
    return len(choices) == 1 and "tool_calls" not in (choices[0].get("delta") or {}) and "usage" not in event


def reserialise_sse_content(event: dict[str, Any]) -> Any:
    from sglang.srt.entrypoints.openai.sse_utils import build_sse_content

    choice = event["choices"][0]
    delta = choice.get("delta") or {}
    text = build_sse_content(
        chunk_id=event.get("id"),
        created=event.get("created"),
        model=event.get("model"),
        index=choice.get("index"),
        role=delta.get("role"),
        content=delta.get("content"),
        reasoning_content=delta.get("reasoning_content"),
        finish_reason=choice.get("finish_reason"),
        logprobs=choice.get("logprobs"),
        matched_stop=choice.get("matched_stop"),
        usage=event.get("usage"),
    )
    return json.loads(text[len("data: ") :])


def schema_checks(exchange: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Validate with SGLang's pydantic classes and re-serialise with SGLang's exclude rules."""
    from sglang.srt.entrypoints.openai import protocol as p

    emu = exchange["response"]
    path = exchange["request"]["path"]
    items: list[tuple[str, Any, Any]] = []
    if emu["status"] != 200:
        body = compare.parse_body(emu["body"])
        if isinstance(body, dict) and body.get("object") == "error":
            items.append(("body", body, p.ErrorResponse))
    elif path in ("/v1/chat/completions", "/v1/completions"):
        chat = path.endswith("chat/completions")
        if emu.get("sse") is not None:
            cls = p.ChatCompletionStreamResponse if chat else p.CompletionStreamResponse
            for i, event in enumerate(compare.sse_events(emu["body"])):
                if isinstance(event, dict) and "choices" in event:
                    items.append((f"events[{i}]", event, cls))
        else:
            items.append(
                ("body", compare.parse_body(emu["body"]), p.ChatCompletionResponse if chat else p.CompletionResponse)
            )
    elif path == "/v1/models":
        items.append(("body", compare.parse_body(emu["body"]), p.ModelList))
    elif path.startswith("/v1/models/") and emu["status"] == 200:
        items.append(("body", compare.parse_body(emu["body"]), p.ModelCard))
    out: list[tuple[str, Any, Any]] = []
    for where, value, cls in items:
        try:
            model = cls.model_validate(value)
        except (ValueError, TypeError) as exc:  # pydantic.ValidationError is a ValueError
            out.append((f"{where} (pydantic {cls.__name__})", surface_checks.dumps(value), str(exc)[:300]))
            continue
        if cls is p.ChatCompletionStreamResponse and _sse_content_path(value):
            again = reserialise_sse_content(value)
        else:
            # usage chunks go out with exclude_none in serving_completions; others as dumped
            exclude_none = cls is p.CompletionStreamResponse and not value.get("choices")
            again = json.loads(model.model_dump_json(exclude_none=exclude_none))
        for path_, a, b in compare.diff(value, again, f"{where} (re-serialised {cls.__name__})"):
            out.append((path_, a, b))
    return out


def run(captured: dict[str, Any]) -> dict[str, Any]:
    import sglang
    from sglang_ref import Reference, server_info_api_key

    emulator = captured["emulator"]
    deviations = emulator.get("deviations") or []
    allowed_headers = {d["name"].lower() for d in deviations if d["kind"] == "header"}
    allowed_info = {d["name"] for d in deviations if d["kind"] == "server_info"}
    allowed_meta = {d["name"] for d in deviations if d["kind"] == "meta_info"}
    allowed_metrics = {d["name"] for d in deviations if d["kind"] == "metric"}
    allowed_values = {d["name"] for d in deviations if d["kind"] == "server_info_value"}
    started = time.monotonic()
    ref = Reference(
        model=emulator["model"],
        context_length=emulator["context_length"],
        api_key=emulator["api_key"],
        reasoning_parser=emulator.get("reasoning_parser", "kimi_k2"),
        tool_call_parser=emulator.get("tool_call_parser", "kimi_k2"),
        hf_config=emulator.get("hf_config"),
        multimodal=bool(emulator.get("multimodal", False)),
    )
    eos = int(emulator["eos_token_id"])
    mismatches: list[dict[str, Any]] = []
    cases: dict[str, dict[str, Any]] = {}

    def add(
        exchange: dict[str, Any], items: list[tuple[str, Any, Any]], surface: str | None = None, note: str = ""
    ) -> None:
        for where, a, b in items:
            mismatches.append(
                {
                    "case": exchange["id"],
                    "surface": surface or exchange["surface"],
                    "where": where,
                    "emulator": a,
                    "sglang": b,
                    "note": note,
                }
            )

    for exchange in captured["exchanges"]:
        path = exchange["request"]["path"]
        script = script_for(exchange, eos)
        answer = ref.send(exchange, script)
        before = len(mismatches)
        if path == "/v1/chat/completions":
            thinking = replay.thinking_on(replay.request_json(exchange))
            rows = grammar_checks.check(ref.tm.last_sampling_params, script, thinking, exchange["response"]["status"])
            add(exchange, rows, note="the grammar SGLang decodes under (xgrammar)")
        emu_body = compare.parse_body(exchange["response"]["body"])
        ref_body = compare.parse_body(answer["body"])
        if path in ("/server_info", "/model_info", "/metrics") and answer["status"] == 200:
            if compare.media_type(exchange["response"]["headers"]) != compare.media_type(answer["headers"]):
                add(
                    exchange,
                    [
                        (
                            "content-type",
                            exchange["response"]["headers"].get("content-type"),
                            answer["headers"].get("content-type"),
                        )
                    ],
                )
            if exchange["response"]["status"] != answer["status"]:
                add(exchange, [("status", exchange["response"]["status"], answer["status"])])
            elif path == "/server_info":
                add(exchange, surface_checks.check_server_info(emu_body, ref_body, allowed_info))
                key = emulator["api_key"] if exchange["variant"] == "auth" else None
                expected = server_info_api_key(key)
                if "api_key" in allowed_values:  # the declared deviation: masked, never the key itself
                    expected = "***" if key else None
                if emu_body.get("api_key") != expected:
                    add(exchange, [("server_info.api_key", emu_body.get("api_key"), expected)])
            elif path == "/model_info":
                add(exchange, surface_checks.check_model_info(emu_body, ref_body, allowed_info))
            else:
                add(
                    exchange,
                    surface_checks.check_metrics(exchange["response"]["body"], allowed_metrics, ref.server_args),
                )
            extra = (
                set(exchange["response"]["headers"]) - set(answer["headers"]) - compare.HOP_HEADERS - allowed_headers
            )
            add(
                exchange,
                [(f"header {h}", exchange["response"]["headers"][h], "<absent>") for h in sorted(extra)],
                surface="headers",
            )
        else:
            mismatches.extend(compare.compare_exchange(exchange, answer, allowed_headers))
        if path == "/generate" and exchange["response"]["status"] == 200:
            body = (
                emu_body
                if exchange["response"].get("sse") is None
                else [e for e in compare.sse_events(exchange["response"]["body"]) if isinstance(e, dict)]
            )
            add(exchange, surface_checks.check_generate_meta(body, allowed_meta))
        add(exchange, schema_checks(exchange), note="SGLang's pydantic classes")
        cases[exchange["id"]] = {"surface": exchange["surface"], "mismatches": len(mismatches) - before}
    return {
        "sglang_version": sglang.__version__,
        "expected_sglang": EXPECTED_SGLANG,
        "strict": captured.get("strict", False),
        "seconds": round(time.monotonic() - started, 1),
        "cases": cases,
        "mismatches": mismatches,
        "deviations": deviations,
    }


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    captured = json.loads(Path(argv[1]).read_text())
    report = run(captured)
    text = json.dumps(report, indent=1, default=str)
    if len(argv) > 2:
        Path(argv[2]).write_text(text)
    print(text)
    return 1 if report["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
