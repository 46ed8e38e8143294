"""SGLang's own HTTP server, booted in-process on a stub engine: the reference the emulator is held to.

Runs in the bench tool env (real ``sglang`` 0.5.23). Everything that shapes a response is
SGLang's code: the FastAPI app and its exception handlers
(sglang/srt/entrypoints/http_server.py), the API-key middleware (sglang/srt/utils/auth.py),
the OpenAI serving layer (entrypoints/openai/serving_base.py, serving_chat.py,
serving_completions.py) with its Kimi reasoning parser (parser/reasoning_parser.py) and Kimi
tool-call detector (function_call/kimik2_detector.py), and the context-length check
(managers/tokenizer_manager.py ``_validate_one_request``). What is stubbed is what cannot run
here and only moves data: the scheduler/tokenizer process behind ``TokenizerManager`` (its
``generate_request`` replays a token script, see replay.py) and the chat-template tokenization
step (``_convert_to_internal_request``: no Kimi tokenizer without the model hub).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
import types
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

from surface_checks import startup_breakdown  # sibling: this folder is on sys.path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# SGLang serves /metrics from prometheus_client's multiprocess registry (utils/common.py
# add_prometheus_middleware); the directory must exist before prometheus_client is imported.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="sglang-contract-prom-"))
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
logging.disable(logging.WARNING)

from sglang.srt.runtime_context import publish
from sglang.srt.server_args import prepare_server_args

Script = dict[str, Any]


class StubTokenizerManager:
    """The attributes SGLang's handlers read from TokenizerManager, with a replayed engine."""

    def __init__(
        self, server_args: Any, *, model: str, context_length: int, hf_config: Any = None, multimodal: bool = False
    ) -> None:
        from sglang.srt.managers.tokenizer_manager import ServerStatus

        self.server_args = server_args
        self.served_model_name = model
        self.model_path = model
        self.is_generation = True
        self.context_len = context_length
        self.num_reserved_tokens = 0
        self.allow_auto_truncate = False
        self.validate_total_tokens = True
        self.enable_metrics = True
        self.tokenizer = None
        self.gracefully_exit = False
        self.server_status = ServerStatus.Up
        self.last_receive_tstamp = 0.0
        self.startup_time = startup_breakdown(tokenizer=True)  # set_startup_time: the scheduler's + tokenizer_e2e
        self.request_logger = SimpleNamespace(log_requests=False, log_requests_level=0)
        hf_config = hf_config or SimpleNamespace(
            model_type="kimi_k25", architectures=["KimiK25ForConditionalGeneration"]
        )
        self.model_config = SimpleNamespace(
            context_len=context_length,
            is_multimodal=multimodal,
            hf_config=hf_config,
            is_image_understandable_model=True,
            is_audio_understandable_model=False,
            get_default_sampling_params=dict,
        )
        self.rid_to_state: dict[str, Any] = {}
        self.script: Script | None = None
        self.last_sampling_params: dict[str, Any] = {}  # what the last request asked the engine (its constraint)
        self.internal_state: dict[str, Any] = {}

    # ---- what the handlers call
    def __getattr__(self, name: str) -> Any:
        """Any other TokenizerManager method runs as SGLang wrote it, on this object."""
        from sglang.srt.managers.tokenizer_manager import TokenizerManager

        attr = getattr(TokenizerManager, name, None)
        if callable(attr) and not isinstance(attr, type):
            return types.MethodType(attr, self)
        raise AttributeError(name)

    def is_ready(self) -> bool:
        return True

    def create_abort_task(self, obj: Any) -> None:
        return None

    async def flush_cache(self, timeout_s: float = 0.0) -> Any:
        return SimpleNamespace(success=True, message="")  # an idle engine flushes

    async def get_internal_state(self) -> list[dict[str, Any]]:
        return [self.internal_state]

    def _validate_joint_schema_request(self, obj: Any, input_ids: list[int]) -> None:
        return None  # decision layouts are not used by these requests

    async def generate_request(self, obj: Any, request: Any = None) -> AsyncIterator[Any]:
        """Replay the current script the way TokenizerManager.generate_request yields outputs."""
        from sglang.srt.managers.tokenizer_manager import TokenizerManager

        rid = getattr(obj, "rid", None)
        if isinstance(rid, str) and rid.startswith("HEALTH_CHECK"):
            self.last_receive_tstamp = time.time()
            yield {"text": "", "output_ids": [0], "meta_info": {"id": rid}}
            return
        script = self.script or {}
        self.last_sampling_params = dict(getattr(obj, "sampling_params", None) or {})
        prompt_tokens = int(script.get("prompt_tokens") or 1)
        # SGLang's own context-length check, with the emulator's prompt length.
        TokenizerManager._validate_one_request(self, obj, [0] * prompt_tokens)
        if not getattr(obj, "stream", False):
            finals = script.get("finals", [])
            yield finals if len(finals) > 1 else (finals[0] if finals else {})
            return
        for item in script.get("stream", []):
            await asyncio.sleep(0)
            yield item


def _tool_call_constraint(serving: Any, request: Any) -> Any:
    """serving_chat.py ``_process_messages``'s tool-call constraint for a kimi_k2 launch (no template step):
    the parser's structure constraint, else the JSON-schema one for tool_choice required/named."""
    from sglang.srt.entrypoints.openai.protocol import ToolChoice
    from sglang.srt.entrypoints.openai.serving_chat import get_json_schema_constraint
    from sglang.srt.function_call.function_call_parser import FunctionCallParser

    tools = serving._effective_tools(request)
    if not (tools and request.tool_choice != "none" and serving.tool_call_parser):
        return None
    parser = FunctionCallParser(tools, serving.tool_call_parser)
    # thinking_mode: SGLang passes `thinking and reasoning_parser is None`, False with kimi_k2's parser
    constraint = parser.get_structure_constraint(
        request.tool_choice, parallel_tool_calls=request.parallel_tool_calls, thinking_mode=False
    )
    forced = request.tool_choice == "required" or isinstance(request.tool_choice, ToolChoice)
    if constraint is None and forced and not parser.detector.parses_required_natively():
        schema = get_json_schema_constraint(tools, request.tool_choice, parallel_tool_calls=request.parallel_tool_calls)
        constraint = ("json_schema", schema)
    return constraint


def _chat_conversion(serving: Any):
    def convert(request: Any, raw_request: Any = None) -> tuple[Any, Any]:
        constraint = _tool_call_constraint(serving, request)
        params = request.to_sampling_params(stop=[], model_generation_config={}, tool_call_constraint=constraint)
        if params.get("json_schema"):
            # serving_chat.py _set_json_grammar_start, kimi_k2's detector (no response template):
            # a JSON answer turns the tool-call parser off for this request.
            request._response_parser_json_response_format = constraint is None or constraint[0] != "json_schema"
        return SimpleNamespace(stream=request.stream, sampling_params=params, rid=None), request

    return convert


def _completion_conversion(serving: Any):
    def convert(request: Any, raw_request: Any = None) -> tuple[Any, Any]:
        params = serving._build_sampling_params(request)
        return SimpleNamespace(stream=request.stream, sampling_params=params, rid=None), request

    return convert


def _serving_chat(tm: StubTokenizerManager, template_manager: Any) -> Any:
    """OpenAIServingChat as its __init__ leaves it for the launch's parsers, minus the tokenizer probes."""
    from sglang.srt.entrypoints.openai import chat_encoding
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    chat = OpenAIServingChat.__new__(OpenAIServingChat)
    chat.tokenizer_manager = tm
    chat.allowed_custom_labels = None
    chat.template_manager = template_manager
    chat.tool_call_parser = tm.config_value("tool_call_parser")
    chat.reasoning_parser = tm.config_value("reasoning_parser")
    chat.default_chat_template_kwargs = {}
    chat._reasoning_detector = ReasoningParser(model_type=chat.reasoning_parser, stream_reasoning=True).detector
    chat.default_sampling_params = {}
    chat.is_gpt_oss = chat.is_gemma4 = chat.is_minimax_m3 = False
    # serving_chat.py _resolve_chat_encoding_spec: "kimi_k3" under --tool-call-parser kimi_k3
    chat.chat_encoding_spec = chat_encoding.resolve_chat_encoding_spec(
        hf_config=tm.model_config.hf_config, tokenizer=None, tool_call_parser=chat.tool_call_parser
    )
    chat.supports_inline_system = True
    chat._encoding_adapter = None
    chat._response_parser = None
    chat._tokenizer_auto_adds_specials = False
    chat._prompt_text_round_trip_is_lossy = False
    chat._template_reads_reasoning_content = False
    chat._convert_to_internal_request = _chat_conversion(chat)
    return chat


def _serving_completion(tm: StubTokenizerManager, template_manager: Any) -> Any:
    from sglang.srt.entrypoints.openai.serving_completions import (
        OpenAIServingCompletion,
    )

    completion = OpenAIServingCompletion(tm, template_manager)
    completion._convert_to_internal_request = _completion_conversion(completion)
    return completion


def _api_key_middleware(app: Any, api_key: str) -> Any:
    """SGLang's _ApiKeyASGIMiddleware wrapped around ``app`` (add_api_key_middleware, unapplied)."""
    from sglang.srt.utils.auth import add_api_key_middleware

    captured: dict[str, Any] = {}

    class _Recorder:
        def add_middleware(self, cls: Any, **kwargs: Any) -> None:
            captured.update(cls=cls, kwargs=kwargs)

    add_api_key_middleware(_Recorder(), api_key=api_key, admin_api_key=None)
    kwargs = {**captured["kwargs"], "fastapi_app": app}
    return captured["cls"](app, **kwargs)


def server_info_api_key(api_key: str | None) -> Any:
    """``api_key`` as SGLang's /server_info prints it for a server started with this key.

    Through SGLang's own code: ServerArgs from the CLI, then build_server_info (what the
    route returns under the live scheduler fields).
    """
    from sglang.srt.utils.common import build_server_info

    argv = ["--model-path", "dummy"] + (["--api-key", api_key] if api_key else [])
    return build_server_info(prepare_server_args(argv), {})["api_key"]


class Reference:
    """One booted reference: ``send`` replays a request; ``script`` sets what the engine yields."""

    def __init__(
        self,
        *,
        model: str,
        context_length: int,
        api_key: str,
        reasoning_parser: str = "kimi_k2",
        tool_call_parser: str = "kimi_k2",
        hf_config: dict[str, Any] | None = None,
        multimodal: bool = False,
    ) -> None:
        """``hf_config``: model_type and architectures of the model served (default Kimi-K2.6's);
        ``multimodal``: ModelConfig.is_multimodal (serving_chat.py _validate_media_content reads it)."""
        from starlette.testclient import TestClient

        self.server_args = prepare_server_args(
            [
                "--model-path",
                "dummy",
                "--served-model-name",
                model,
                "--context-length",
                str(context_length),
                "--reasoning-parser",
                reasoning_parser,
                "--tool-call-parser",
                tool_call_parser,
                "--enable-metrics",
            ]
        )
        publish(self.server_args, role="tokenizer")
        from sglang.srt.entrypoints import http_server

        self.http_server = http_server
        self.tm = StubTokenizerManager(
            self.server_args,
            model=model,
            context_length=context_length,
            hf_config=SimpleNamespace(**hf_config) if hf_config else None,
            multimodal=multimodal,
        )
        template_manager = SimpleNamespace(
            force_reasoning=False,
            reasoning_config=None,
            chat_template_name=None,
            completion_template_name=None,
            jinja_template_content_format="string",
        )
        self.scheduler_info = {
            "status": "ready",
            "max_total_num_tokens": 0,
            "max_req_input_len": context_length - 1,
            "startup_time": startup_breakdown(tokenizer=False),
            "hicache_object_layout": None,
        }
        http_server.set_global_state(
            http_server._GlobalState(
                tokenizer_manager=self.tm, template_manager=template_manager, scheduler_info=self.scheduler_info
            )
        )
        app = http_server.app
        from sglang.srt.utils.common import add_prometheus_middleware

        add_prometheus_middleware(app)  # what the lifespan does under --enable-metrics
        app.state.openai_serving_chat = _serving_chat(self.tm, template_manager)
        app.state.openai_serving_completion = _serving_completion(self.tm, template_manager)
        self.clients = {
            "default": TestClient(app, raise_server_exceptions=False),
            "auth": TestClient(_api_key_middleware(app, api_key), raise_server_exceptions=False),
        }

    def send(self, exchange: dict[str, Any], script: Script | None) -> dict[str, Any]:
        """Replay one captured request; returns status, lower-cased headers and body."""
        self.tm.script = script
        self.tm.last_sampling_params = {}
        req = exchange["request"]
        body = req["body"].encode() if req["body"] is not None else None
        response = self.clients[exchange["variant"]].request(
            req["method"], req["path"], content=body, headers=req["headers"]
        )
        return {
            "status": response.status_code,
            "headers": {k.lower(): v for k, v in response.headers.items()},
            "body": response.text,
        }
