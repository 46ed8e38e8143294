"""Checks of surfaces whose values are the server's own (server args, memory, metrics).

There the reference cannot know the emulator's numbers, so what is compared is shape, taken
from SGLang's code: the key sets of ``/server_info`` (ServerArgs.resolved_dict + the HTTP
server's additions, sglang/srt/utils/common.py build_server_info and
entrypoints/http_server.py server_info), of its ``internal_states`` entry
(managers/scheduler_components/internal_state.py, memory_usage.py) and of ``/model_info``,
with each value's JSON type; ``/generate`` ``meta_info`` keys against the keys
TokenizerManager writes (managers/tokenizer_manager.py ``_handle_batch_output``, read with
``ast`` so a new SGLang version moves the expectation by itself); and ``/metrics`` families
against SGLang's collectors (observability/metrics_collector.py): name, type, label names,
histogram buckets.
"""

from __future__ import annotations

import ast
import inspect
import json
from types import SimpleNamespace
from typing import Any

JSON_TYPES = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "number",
    float: "number",
    type(None): "null",
}


def json_type(value: Any) -> str:
    return JSON_TYPES.get(type(value), type(value).__name__)


def shape_diff(emulator: Any, sglang: Any, where: str) -> list[tuple[str, Any, Any]]:
    """Key-set and JSON-type differences (a null on either side matches any type)."""
    out: list[tuple[str, Any, Any]] = []
    if isinstance(emulator, dict) and isinstance(sglang, dict):
        for key in sorted(set(emulator) | set(sglang), key=str):
            path = f"{where}.{key}"
            if key not in emulator:
                out.append((path, "<absent>", json_type(sglang[key])))
            elif key not in sglang:
                out.append((path, json_type(emulator[key]), "<absent>"))
            else:
                out += shape_diff(emulator[key], sglang[key], path)
        return out
    if isinstance(emulator, list) and isinstance(sglang, list):
        for i, (a, b) in enumerate(zip(emulator[:1], sglang[:1])):
            out += shape_diff(a, b, f"{where}[{i}]")
        return out
    if emulator is None or sglang is None:
        return out
    if json_type(emulator) != json_type(sglang):
        out.append((where, json_type(emulator), json_type(sglang)))
    return out


GRAPH_PHASES = ("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend")


def startup_breakdown(tokenizer: bool) -> dict[str, Any]:
    """``startup_time`` in 0.5.23: seconds per start-up step, not a timestamp (the scheduler's breakdown;
    the tokenizer manager adds tokenizer_e2e). Seen on a live server: test_live_differential.py."""
    out: dict[str, Any] = {
        "load_weight": 0.0,
        "kv_cache_allocation": 0.0,
        "scheduler_e2e": 0.0,
        "cuda_graph": dict.fromkeys(GRAPH_PHASES, 0.0),
    }
    if tokenizer:
        out["tokenizer_e2e"] = 0.0
    return out


def reference_internal_state(emulator_state: dict[str, Any]) -> dict[str, Any]:
    """What SGLang's scheduler answers for /server_info internal_states, fed the emulator's numbers."""
    from sglang.srt.managers.scheduler_components.internal_state import (
        SchedulerInternalStateController,
    )

    memory = emulator_state.get("memory_usage") or {}
    graph = memory.get("graph")
    scheduler = SimpleNamespace(
        tp_worker=SimpleNamespace(
            model_runner=SimpleNamespace(weight_load_mem_usage=float(memory.get("weight") or 0)),
            graph_memory_usage=graph if isinstance(graph, dict) else None,
            get_decode_cuda_graph_bs=lambda: list(emulator_state.get("decode_cuda_graph_bs") or []),
        ),
        token_to_kv_pool_allocator=SimpleNamespace(
            get_kvcache=lambda: SimpleNamespace(mem_usage=float(memory.get("kvcache") or 0))
        ),
        startup_available_gpu_memory_gb=float(memory.get("startup_available") or 0),
        max_total_num_tokens=int(memory.get("token_capacity") or 0),
        swa_tokens_per_layer=None,
        draft_worker=None,
        # a real scheduler always has a mode (NULL when not disaggregated) and a start-up breakdown
        # (seen on a live SGLang 0.5.23 server: tests/contract/test_live_differential.py)
        disaggregation_mode=SimpleNamespace(value="null"),
        startup_time=startup_breakdown(tokenizer=False),
        max_running_requests=1,
        rust_server=None,
        metrics_reporter=SimpleNamespace(last_gen_throughput=0.0, step_time_dict={}),
        spec_algorithm=SimpleNamespace(is_none=lambda: True),
    )
    controller = SchedulerInternalStateController(scheduler, record_step_time=False)
    return controller.get_internal_state(None).internal_state


def check_server_info(
    emulator: dict[str, Any], reference: dict[str, Any], allowed_keys: set[str]
) -> list[tuple[str, Any, Any]]:
    emu = {k: v for k, v in emulator.items() if k not in allowed_keys}
    states = emu.get("internal_states") or [{}]
    ref = dict(reference)
    ref["internal_states"] = [reference_internal_state(states[0] if states else {})]
    return shape_diff(emu, ref, "server_info")


def check_model_info(
    emulator: dict[str, Any], reference: dict[str, Any], allowed_keys: set[str]
) -> list[tuple[str, Any, Any]]:
    emu = {k: v for k, v in emulator.items() if k not in allowed_keys}
    return shape_diff(emu, reference, "model_info")


# ---------------------------------------------------------------- /generate meta_info


def meta_info_keys() -> tuple[set[str], set[str]]:
    """(keys every output carries, keys an output may carry) per TokenizerManager's source.

    Always: the ``meta_info = {...}`` literal in ``_handle_batch_output`` plus the
    ``meta_info.update({...})`` for generation outputs. May: every other
    ``meta_info["k"] = ...`` in that method, and the time-stat keys
    (observability/req_time_stats.py ``convert_to_output_meta_info``).
    """
    from sglang.srt.managers.tokenizer_manager import TokenizerManager
    from sglang.srt.observability import req_time_stats

    always: set[str] = set()
    maybe: set[str] = set()
    tree = ast.parse(inspect.getsource(TokenizerManager._handle_batch_output).strip().replace("\n    ", "\n"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Dict)
            and any(isinstance(t, ast.Name) and t.id == "meta_info" for t in node.targets)
        ):
            always |= {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "meta_info"
            and node.args
            and isinstance(node.args[0], ast.Dict)
        ):
            always |= {k.value for k in node.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "meta_info"
            and isinstance(node.slice, ast.Constant)
        ):
            maybe.add(str(node.slice.value))
    from sglang.srt.utils import weight_versions  # add_weight_versions_to_meta_info: the last output's spans

    source = inspect.getsource(req_time_stats) + "\n" + inspect.getsource(weight_versions)
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id in ("meta_info", "meta_data")
            and isinstance(node.slice, ast.Constant)
        ):
            maybe.add(str(node.slice.value))
        if isinstance(node, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == "queue_time" for k in node.keys
        ):
            maybe |= {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return always, maybe | {"e2e_latency"}


def check_generate_meta(body: Any, allowed_keys: set[str]) -> list[tuple[str, Any, Any]]:
    always, maybe = meta_info_keys()
    items = body if isinstance(body, list) else [body]
    out: list[tuple[str, Any, Any]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "meta_info" not in item:
            continue
        keys = set(item["meta_info"]) - allowed_keys
        for key in sorted(always - keys):
            out.append((f"[{i}].meta_info.{key}", "<absent>", "always sent"))
        for key in sorted(keys - always - maybe):
            out.append((f"[{i}].meta_info.{key}", "sent", "<not a key SGLang writes>"))
        if "output_ids" not in item:
            out.append((f"[{i}].output_ids", "<absent>", "always sent"))
    return out


# ---------------------------------------------------------------- /metrics

_REFERENCE_METRICS: dict[str, dict[str, Any]] = {}


def reference_metrics(server_args: Any = None) -> dict[str, dict[str, Any]]:
    """name -> {type, labels, buckets} for every metric SGLang's two main collectors declare.

    Built once per process: prometheus_client refuses a second registration of a name.
    """
    if _REFERENCE_METRICS:
        return _REFERENCE_METRICS
    from sglang.srt.observability.metrics_collector import (
        SchedulerMetricsCollector,
        TokenizerMetricsCollector,
        tokenizer_metric_labels,
    )
    from sglang.srt.runtime_context import get_serving

    scheduler_labels = {
        "model_name": get_serving().served_model_name,
        "engine_type": "unified",
        "tp_rank": 0,
        "pp_rank": 0,
        "moe_ep_rank": 0,
    }
    collectors = [
        TokenizerMetricsCollector(server_args=server_args, labels=tokenizer_metric_labels()),
        SchedulerMetricsCollector(labels=scheduler_labels, server_args=server_args),
    ]
    out = _REFERENCE_METRICS
    for collector in collectors:
        for value in vars(collector).values():
            name = getattr(value, "_name", None)
            kind = getattr(value, "_type", None)
            if not isinstance(name, str) or not isinstance(kind, str):
                continue
            bounds = [b for b in getattr(value, "_upper_bounds", []) if b != float("inf")]
            labels = list(getattr(value, "_labelnames", ()))
            if kind == "gauge" and getattr(value, "_multiprocess_mode", "") in ("all", "liveall"):
                labels.append("pid")  # the multiprocess registry (--enable-metrics) keeps one series per process
            out[name] = {
                "type": kind,
                "labels": sorted(labels),
                "buckets": bounds if kind == "histogram" else None,
            }
    return out


def emulator_metrics(text: str) -> dict[str, dict[str, Any]]:
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, dict[str, Any]] = {}
    for family in text_string_to_metric_families(text):
        labels: set[str] = set()
        buckets: list[float] = []
        for sample in family.samples:
            labels |= set(sample.labels) - {"le"}
            if sample.name.endswith("_bucket") and sample.labels.get("le") not in (None, "+Inf"):
                buckets.append(float(sample.labels["le"]))
        out[family.name] = {
            "type": family.type,
            "labels": sorted(labels),
            "buckets": sorted(set(buckets)) if family.type == "histogram" else None,
        }
    return out


def check_metrics(text: str, allowed: set[str], server_args: Any = None) -> list[tuple[str, Any, Any]]:
    reference = reference_metrics(server_args)
    out: list[tuple[str, Any, Any]] = []
    for name, emu in sorted(emulator_metrics(text).items()):
        if name in allowed:
            continue
        ref = reference.get(name)
        if ref is None:
            out.append((name, emu["type"], "<no such metric in SGLang's collectors>"))
            continue
        for field in ("type", "labels", "buckets"):
            if emu[field] != ref[field]:
                out.append((f"{name}.{field}", emu[field], ref[field]))
    return out


def dumps(value: Any) -> str:
    return json.dumps(value, default=str)[:300]
