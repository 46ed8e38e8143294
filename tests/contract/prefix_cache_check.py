"""SGLang's own answer to what the emulator's prefix cache reports, for the capture in argv[1].

Usage (the bench tool env's python, which has the real ``sglang`` package):

    .venvs/bench/bin/python tests/contract/prefix_cache_check.py captured.json report.json

Judged by SGLang 0.5.23's code, unchanged:

* usage: ``UsageProcessor.calculate_response_usage`` / ``calculate_streaming_usage`` fed the
  meta_info counts (prompt, completion, reasoning, cached) the emulator reported, with and without
  ``--enable-cache-report`` (srt/entrypoints/openai/usage_processor.py), dumped as
  ``ChatCompletionResponse`` / ``CompletionStreamResponse`` dump them;
* sglext: ``SchedulerOutputStreamer.get_cached_tokens_details`` (scheduler_components/output_streamer.py)
  -> ``cached_tokens_details_from_dict`` -> ``SglExt`` inside ``ChatCompletionStreamResponse`` /
  ``CompletionStreamResponse`` chunks and whole responses (serving_chat.py, serving_completions.py);
* /metrics: the cache families' names, types and label names against SGLang's collectors
  (surface_checks.check_metrics);
* the radix tree: the same insert / match / evict sequence run through SGLang's ``RadixCache``
  (srt/mem_cache/radix_cache.py, ``create_simulated`` with a stand-in allocator) must give the
  same match lengths and tree sizes, page size 1 and 64.

Writes {"sglang_version", "mismatches": [{"case", "where", "emulator", "sglang"}]}; exits 1 on mismatches.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def _details(cached: int) -> Any:
    from sglang.srt.managers.scheduler_components.output_streamer import SchedulerOutputStreamer

    streamer = SimpleNamespace(enable_hicache_storage=lambda: False)
    req = SimpleNamespace(
        cached_tokens=cached, cached_tokens_device=cached, cached_tokens_host=0, cached_tokens_storage=0
    )
    return SchedulerOutputStreamer.get_cached_tokens_details(streamer, req)  # type: ignore[arg-type]


def _sglext(cached: int) -> Any:
    from sglang.srt.entrypoints.openai.protocol import SglExt
    from sglang.srt.entrypoints.openai.utils import cached_tokens_details_from_dict

    details = _details(cached)
    return SglExt(cached_tokens_details=cached_tokens_details_from_dict(details)) if details else None


def usage_case(case: dict[str, Any]) -> Any:
    from sglang.srt.entrypoints.openai.usage_processor import UsageProcessor

    meta = case["meta"]
    if case["kind"] == "stream":
        usage = UsageProcessor.calculate_streaming_usage(
            {0: meta["prompt_tokens"]},
            {0: meta["reasoning_tokens"]},
            {0: meta["completion_tokens"]},
            cached_tokens={0: meta["cached_tokens"]},
            n_choices=1,
            enable_cache_report=case["report"],
        )
        return json.loads(usage.model_dump_json(exclude_none=case["exclude_none"]))
    usage = UsageProcessor.calculate_response_usage(
        [{"meta_info": meta}], n_choices=1, enable_cache_report=case["report"]
    )
    return json.loads(usage.model_dump_json())


def sglext_chunk(case: dict[str, Any]) -> Any:
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionStreamResponse, CompletionStreamResponse

    ext = _sglext(case["cached"])
    if ext is None:
        return None
    cls = ChatCompletionStreamResponse if case["route"] == "chat" else CompletionStreamResponse
    extra = {} if case["route"] == "chat" else {"object": "text_completion"}
    chunk = cls(id=case["id"], created=case["created"], choices=[], model=case["model"], sglext=ext, **extra)
    return json.loads(chunk.model_dump_json())


def whole_sglext(case: dict[str, Any]) -> Any:
    ext = _sglext(case["cached"])
    return None if ext is None else json.loads(ext.model_dump_json())


def radix_case(case: dict[str, Any]) -> list[Any]:
    from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams
    from sglang.srt.mem_cache.radix_cache import RadixCache, RadixKey

    alloc = SimpleNamespace(device="cpu", free_segment=lambda *a, **k: None, page_size=case["page_size"])
    tree = RadixCache.create_simulated(mock_allocator=alloc, page_size=case["page_size"])
    out: list[Any] = []
    for op, arg in case["ops"]:
        if op == "insert":
            tree.insert(InsertParams(key=RadixKey(list(arg))))
            out.append(["insert", tree.total_size()])
        elif op == "match":
            out.append(["match", tree.match_prefix(MatchPrefixParams(key=RadixKey(list(arg)))).device_prefix_len])
        else:
            tree.evict(EvictParams(num_tokens=arg))
            out.append(["evict", tree.total_size()])
    return out


def main() -> int:
    import sglang
    from sglang.srt.server_args import prepare_server_args
    from sglang_ref import publish
    from surface_checks import check_metrics

    captured = json.loads(Path(sys.argv[1]).read_text())
    server_args = prepare_server_args(
        ["--model-path", "dummy", "--served-model-name", captured["model"], "--enable-metrics", "--enable-cache-report"]
    )
    publish(server_args, role="tokenizer")
    mismatches: list[dict[str, Any]] = []

    def judge(case: str, where: str, emulator: Any, reference: Any) -> None:
        if emulator != reference:
            mismatches.append({"case": case, "where": where, "emulator": emulator, "sglang": reference})

    for case in captured["usage"]:
        judge(case["name"], "usage", case["emulator"], usage_case(case))
    for case in captured["sglext_chunks"]:
        judge(case["name"], "sglext chunk", case["emulator"], sglext_chunk(case))
    for case in captured["sglext_whole"]:
        judge(case["name"], "sglext", case["emulator"], whole_sglext(case))
    for where, emulator, reference in check_metrics(captured["metrics"], set(captured["metrics_allowed"]), server_args):
        judge("metrics", where, emulator, reference)
    for case in captured["radix"]:
        judge(case["name"], "radix", case["emulator"], radix_case(case))
    Path(sys.argv[2]).write_text(json.dumps({"sglang_version": sglang.__version__, "mismatches": mismatches}))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
