"""A small OpenAI-compatible server that behaves as llama-cpp-python's does (tests only).

What the unit tests need from a server the project did not write: no /health (404), a key
checked on /v1/* with `{"detail":"Invalid API key"}`, any `model` value accepted, one listed id,
usage in non-streamed answers, and knobs for the ways such a server disagrees with the
benchmark: prompt counts scaled (another tokenizer), max_completion_tokens ignored (outputs to
EOS), a crash on generation (connection dropped, as a segfaulting build does), several models.
Prompt tokens follow the emulator's counting (its tokenizer over its chat template), which is
what the emulator's offline tokenizer directory counts too.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kimi_runbooks.kimi.chat_template import render
from kimi_runbooks.kimi.tokenizer import count_tokens


@dataclass
class StandIn:
    models: list[str] = field(default_factory=lambda: ["stand-in-model"])
    api_key: str | None = None
    health: bool = False
    prompt_factor: float = 1.0
    completion_tokens: int | None = None  # None: honour max_tokens / max_completion_tokens
    crash_on_generate: bool = False
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    def answer(self, method: str, path: str, headers: Any, body: dict[str, Any]) -> tuple[int, Any] | None:
        self.requests.append((method, path, body))
        if path in ("/health", "/health_generate"):
            return (200, {}) if self.health else (404, {"detail": "Not Found"})
        if path.startswith("/v1/") and self.api_key and headers.get("Authorization") != f"Bearer {self.api_key}":
            return 401, {"detail": "Invalid API key"}
        if method == "GET" and path == "/v1/models":
            return 200, {
                "object": "list",
                "data": [{"id": m, "object": "model", "owned_by": "me"} for m in self.models],
            }
        if method == "POST" and path in ("/v1/chat/completions", "/v1/completions"):
            if self.crash_on_generate:
                return None
            return self._completion(path, body)
        return 404, {"detail": "Not Found"}

    def _completion(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        chat = path.endswith("chat/completions")
        if chat:
            content = body["messages"][-1]["content"]
            if not isinstance(content, str):
                return 500, {"error": {"message": 'can only concatenate str (not "list") to str'}}
            prompt = round(self.prompt_factor * count_tokens(render([{"role": "user", "content": content}], None)))
        else:
            prompt = round(self.prompt_factor * count_tokens(body["prompt"]))
        wanted = body.get("max_tokens") or (None if chat else 16)
        out = self.completion_tokens or wanted or 32
        text = " word" * out
        choice = {"index": 0, "finish_reason": "length"}
        choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
        return 200, {
            "id": "cmpl-1",
            "object": "chat.completion" if chat else "text_completion",
            "model": body.get("model"),
            "choices": [choice],
            "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
        }


@contextmanager
def stand_in_server(server: StandIn) -> Iterator[str]:
    """Serve `server` on a free loopback port; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else {}
            reply = server.answer(method, self.path, self.headers, body)
            if reply is None:  # a crashed server: the connection just drops
                self.close_connection = True
                self.connection.shutdown(2)
                return
            status, doc = reply
            data = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            self._serve("POST")

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
