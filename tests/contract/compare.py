"""Diff an emulator exchange against SGLang's reference answer, as data.

A mismatch is a dict (case, surface, where, emulator, sglang, note). Values that differ on
every run by nature are normalised on both sides before comparing: ``created`` timestamps,
request ids (renamed by order of first appearance, so "same id" / "different id" patterns
still count), latency and timestamp fields. Error messages of FastAPI validation errors embed
the path of SGLang's installed source and a line number, which no other server can repeat,
so there only the shape is compared.
"""

from __future__ import annotations

import json
from typing import Any

VOLATILE_KEYS = {
    "created",
    "e2e_latency",
    "startup_time",
    "request_received_ts",
    "request_finished_ts",
    "response_sent_to_client_ts",
    "first_token_latency",
    "queue_time",
    "decode_throughput",
}
ID_KEYS = {"id"}
HOP_HEADERS = {"date", "server", "content-length", "transfer-encoding", "connection"}


class IdNames:
    """Rename ids in order of first appearance: ``<id0>``, ``<id1>``, ..."""

    def __init__(self) -> None:
        self.names: dict[Any, str] = {}

    def __call__(self, value: Any) -> str:
        return self.names.setdefault(value, f"<id{len(self.names)}>")


def normalise(value: Any, ids: IdNames, key: str | None = None, parent: str | None = None) -> Any:
    """Blank volatile values; rename request ids (tool-call ids are compared as they are)."""
    if isinstance(value, dict):
        return {k: normalise(v, ids, k, key) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, ids, key, parent) for v in value]
    if key in VOLATILE_KEYS and isinstance(value, (int, float)):
        return "<volatile>"
    if key in ID_KEYS and isinstance(value, str) and parent != "tool_calls":
        return ids(value)
    return value


def is_validation_message(message: Any) -> bool:
    return isinstance(message, str) and "validation error" in message


def diff(emulator: Any, sglang: Any, where: str = "") -> list[tuple[str, Any, Any]]:
    """Paths where two JSON values differ (missing keys shown as '<absent>')."""
    out: list[tuple[str, Any, Any]] = []
    if isinstance(emulator, dict) and isinstance(sglang, dict):
        for key in sorted(set(emulator) | set(sglang), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in emulator:
                out.append((path, "<absent>", sglang[key]))
            elif key not in sglang:
                out.append((path, emulator[key], "<absent>"))
            elif key == "message" and is_validation_message(sglang[key]):
                if not (isinstance(emulator[key], str) and emulator[key]):
                    out.append((path, emulator[key], "<a non-empty message>"))
            else:
                out += diff(emulator[key], sglang[key], path)
        return out
    if isinstance(emulator, list) and isinstance(sglang, list):
        if len(emulator) != len(sglang):
            out.append((f"{where}[len]", len(emulator), len(sglang)))
        for i, (a, b) in enumerate(zip(emulator, sglang)):
            out += diff(a, b, f"{where}[{i}]")
        return out
    if emulator != sglang or type(emulator) is not type(sglang):
        out.append((where, emulator, sglang))
    return out


def parse_body(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def sse_events(text: str) -> list[Any]:
    """SSE payloads in order; ``event:`` names kept; ``[DONE]`` kept as the string."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        name, data = None, None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = line[len("data: ") :]
        payload = parse_body(data) if data not in (None, "[DONE]") else data
        events.append({"event": name, "data": payload} if name else payload)
    return events


def media_type(headers: dict[str, str]) -> str:
    return headers.get("content-type", "").split(";")[0].strip().lower()


def compare_exchange(exchange: dict[str, Any], ref: dict[str, Any], allowed_headers: set[str]) -> list[dict[str, Any]]:
    """Status, media type, extra headers and the normalised body or event list."""
    case, surface = exchange["id"], exchange["surface"]
    emu = exchange["response"]
    found: list[dict[str, Any]] = []

    def miss(where: str, a: Any, b: Any, note: str = "", on: str | None = None) -> None:
        found.append({"case": case, "surface": on or surface, "where": where, "emulator": a, "sglang": b, "note": note})

    if emu["status"] != ref["status"]:
        miss("status", emu["status"], ref["status"])
    if media_type(emu["headers"]) != media_type(ref["headers"]):
        miss("content-type", emu["headers"].get("content-type"), ref["headers"].get("content-type"))
    extra = set(emu["headers"]) - set(ref["headers"]) - HOP_HEADERS - allowed_headers
    for name in sorted(extra):
        miss(f"header {name}", emu["headers"][name], "<absent>", on="headers")
    stream = media_type(ref["headers"]) == "text/event-stream"
    ids = IdNames()
    if stream:
        a = normalise(sse_events(emu["body"]), ids)
        b = normalise(sse_events(ref["body"]), IdNames())
    else:
        a = normalise(parse_body(emu["body"]), ids)
        b = normalise(parse_body(ref["body"]), IdNames())
    for where, x, y in diff(a, b, "events" if stream else "body"):
        miss(where, x, y)
    return found
