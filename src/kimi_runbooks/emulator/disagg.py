"""PD disaggregation: the emulator as SGLang 0.5.23's prefill or decode server answers the router.

``--disaggregation-mode prefill|decode`` (as ``sglang serve`` takes it). What SGLang does, and the
emulator with it:

* Both roles refuse a generation request without ``bootstrap_room`` (scheduler.py
  ``handle_generate_request``: "Invalid request: Disaggregated request received without bootstrap
  room id.", status 400), unless ``bootstrap_host`` is the fake host ``2.2.2.2`` that SGLang's own
  health check and warm-up use (disaggregation/utils.py ``FAKE_BOOTSTRAP_HOST``).
  sglang-router injects ``bootstrap_host`` / ``bootstrap_port`` / ``bootstrap_room`` into the body
  it sends to both servers of a pair, the same three values to each.
* The prefill server runs the prompt's prefill, samples one token, sends the KV to the decode
  server and answers with that one token and finish_reason ``length`` 0
  (prefill.py ``process_disagg_prefill_inflight_queue``: ``FINISH_LENGTH(length=0)``). Its
  bootstrap server listens on ``--disaggregation-bootstrap-port`` (default 8998) and answers
  ``GET /health`` with ``OK`` (common/conn.py ``CommonKVBootstrapServer``).
* The decode server waits for the KV of that room, skips the prefill and decodes the whole reply;
  when the prefill never sends it, the request is aborted with status 500 and
  "Decode handshake failed for request rank=0 ..." (decode.py).

The KV transfer itself (ZMQ + RDMA/Ascend transfer engine in SGLang) is replaced by one emulator
route on the prefill's bootstrap server, ``GET /kimi_emulator/kv/{room}``: 200 once that room's
prefill is done, 404 before. The decode emulator polls it at ``bootstrap_host:bootstrap_port``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import OrderedDict
from typing import Any

import httpx

from ..target.tls import verified_tls
from .error_answers import ApiError

log = logging.getLogger(__name__)

FAKE_BOOTSTRAP_HOST = "2.2.2.2"
"""sglang/srt/disaggregation/utils.py: the host SGLang's health check and warm-up send (no transfer)."""
DEFAULT_BOOTSTRAP_PORT = 8998
KV_ROUTE = "/kimi_emulator/kv/"
MODES = ("null", "prefill", "decode")
_KEPT_ROOMS = 65536


def _missing_room_message(rid: str) -> str:
    return f"Invalid request: Disaggregated request received without bootstrap room id. req.rid='{rid}'"


class Disaggregation:
    """One server's PD role: the rooms a prefill has sent, the waits a decode does."""

    def __init__(self, mode: str, bootstrap_port: int | None, time_scale: float, host: str = "127.0.0.1") -> None:
        if mode not in MODES:
            raise ValueError(f"--disaggregation-mode must be one of {', '.join(MODES)} (got {mode!r})")
        self.mode = mode
        self.host = host
        self.bootstrap_port = bootstrap_port or DEFAULT_BOOTSTRAP_PORT
        self.time_scale = time_scale
        self.sent: OrderedDict[int, float] = OrderedDict()  # prefill: room -> when its KV was sent
        self.timeout_s = float(os.environ.get("SGLANG_DISAGGREGATION_BOOTSTRAP_TIMEOUT", "300"))
        self.requests = 0  # generation requests this role served (the router test reads it in /server_info)
        self._server: asyncio.base_events.Server | None = None

    @property
    def active(self) -> bool:
        return self.mode != "null"

    # ---- both roles
    def room_of(self, body: Any, rid: str) -> int | None:
        """The request's bootstrap room; refuses a request without one as SGLang's scheduler does."""
        if not self.active:
            return None
        body = body if isinstance(body, dict) else {}
        room, host = body.get("bootstrap_room"), body.get("bootstrap_host")
        if isinstance(room, list):
            room = room[0] if room else None
        if isinstance(host, list):
            host = host[0] if host else None
        if room is None:
            if host == FAKE_BOOTSTRAP_HOST:
                return None
            raise ApiError(_missing_room_message(rid), 400)
        self.requests += 1
        return int(room)

    def token_limit(self, limit: int | None) -> int | None:
        """A prefill server generates exactly one token (the first), whatever the request asked."""
        return 1 if self.mode == "prefill" else limit

    # ---- prefill
    def kv_sent(self, room: int | None) -> None:
        if self.mode != "prefill" or room is None:
            return
        self.sent[room] = time.monotonic()
        while len(self.sent) > _KEPT_ROOMS:
            self.sent.popitem(last=False)

    async def start_bootstrap_server(self) -> None:
        if self.mode != "prefill":
            return
        self._server = await asyncio.start_server(self._serve, self.host, self.bootstrap_port)
        log.info("bootstrap server listening on %s:%d", self.host, self.bootstrap_port)

    async def stop_bootstrap_server(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """A minimal HTTP/1.1 GET server: /health and the emulator's KV route, one request per connection."""
        try:
            line = (await asyncio.wait_for(reader.readline(), 10)).decode("latin-1")
            while (await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            parts = line.split()
            path = parts[1] if len(parts) > 1 else ""
            status, text = self._answer(parts[0] if parts else "", path)
            body = text.encode()
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: text/plain\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    def _answer(self, method: str, path: str) -> tuple[str, str]:
        if method != "GET":
            return "405 Method Not Allowed", "Method Not Allowed"
        if path == "/health":
            return "200 OK", "OK"
        if path.startswith(KV_ROUTE):
            try:
                room = int(path[len(KV_ROUTE) :])
            except ValueError:
                return "400 Bad Request", "bad room"
            return ("200 OK", "sent") if room in self.sent else ("404 Not Found", "not yet")
        if path.startswith("/route"):
            return "400 Bad Request", "Missing inputs for bootstrap server."
        return "404 Not Found", "Not Found"

    # ---- decode
    async def receive_kv(self, body: Any, room: int | None, rid: str) -> bool:
        """Decode: wait until the prefill at bootstrap_host:bootstrap_port has sent this room's KV.
        True when the prompt's KV arrived (the decode then skips its prefill)."""
        if self.mode != "decode" or room is None:
            return False
        host = body.get("bootstrap_host") if isinstance(body, dict) else None
        port = body.get("bootstrap_port") if isinstance(body, dict) else None
        host = host[0] if isinstance(host, list) else host
        port = port[0] if isinstance(port, list) else port
        failure = (
            f"Decode handshake failed for request rank=0 decode_req.req.rid='{rid}' "
            f"decode_req.req.bootstrap_room={room}"
        )
        if not host or not port:
            raise ApiError(f"{failure} with exception no bootstrap_host/bootstrap_port in the request", 500)
        url = f"http://{host}:{int(port)}{KV_ROUTE}{room}"
        deadline = time.monotonic() + self.timeout_s
        pause = max(0.002, 0.02 * self.time_scale)
        async with httpx.AsyncClient(timeout=5.0, verify=verified_tls()) as client:
            while True:
                try:
                    answer = await client.get(url)
                    if answer.status_code == 200:
                        return True
                except httpx.HTTPError as exc:
                    if time.monotonic() >= deadline:
                        raise ApiError(f"{failure} with exception {type(exc).__name__}: {exc}", 500) from None
                if time.monotonic() >= deadline:
                    raise ApiError(f"{failure} with exception KV of room {room} never arrived", 500)
                await asyncio.sleep(pause)


def from_launch_args(args: dict[str, Any], time_scale: float, host: str) -> Disaggregation:
    mode = str(args.get("disaggregation_mode") or "null")
    port = args.get("disaggregation_bootstrap_port")
    return Disaggregation(mode, int(port) if port is not None else None, time_scale, host)


def cap_request(disagg: Disaggregation, req: Any) -> None:
    """A prefill server generates one token: the request's own limit is replaced by 1."""
    if disagg.mode != "prefill":
        return
    if getattr(req, "max_completion_tokens", None) is not None:
        req.max_completion_tokens = 1
    if hasattr(req, "max_tokens"):
        req.max_tokens = 1
    params = getattr(req, "sampling_params", None)
    for p in params if isinstance(params, list) else ([params] if params is not None else []):
        p.max_new_tokens = 1


async def attach(disagg: Disaggregation, body: Any, rid: str, jobs: list[Any]) -> None:
    """Before any job runs: refuse a request without a room, and on a decode server wait for the
    room's KV; each job then records its room (the prefill marks it sent once prefilled)."""
    room = disagg.room_of(body, rid)
    transferred = await disagg.receive_kv(body, room, rid)
    for job in jobs:
        job.room = room
        job.kv_transferred = transferred
