"""/openapi.json is generated from the route table and the request models, so it names every path the
emulator serves with its methods, and a body it documents as valid is one the server accepts."""

from __future__ import annotations

import httpx
import jsonschema
import pytest
from starlette.routing import Route

from kimi_runbooks.emulator.app import ENDPOINTS, create_app

CHAT = {"model": "moonshotai/Kimi-K2.6", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.fixture(scope="module")
def document(emulator_url: str) -> dict:
    return httpx.get(f"{emulator_url}/openapi.json", timeout=10).json()


def _body_validator(document: dict, path: str, method: str = "post") -> jsonschema.Draft202012Validator:
    schema = document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]
    return jsonschema.Draft202012Validator({**schema, "components": document["components"]})


def test_every_served_route_and_method_is_documented(document: dict) -> None:
    assert document["openapi"] == "3.1.0"
    served = {
        (r.path.replace(":path", ""), m.lower())
        for r in create_app().routes
        if isinstance(r, Route)
        for m in r.methods or ()
        if m != "HEAD"
    }
    documented = {(path, method) for path, ops in document["paths"].items() for method in ops}
    assert served == documented
    assert len(document["paths"]) == len({e.path for e in ENDPOINTS})


def test_request_bodies_follow_the_models_the_handlers_validate_with(document: dict, emulator_url: str) -> None:
    chat = _body_validator(document, "/v1/chat/completions")
    chat.validate(CHAT)
    assert httpx.post(f"{emulator_url}/v1/chat/completions", json=CHAT, timeout=30).status_code == 200
    missing = {k: v for k, v in CHAT.items() if k != "messages"}
    assert not chat.is_valid(missing)
    assert httpx.post(f"{emulator_url}/v1/chat/completions", json=missing, timeout=30).status_code == 400
    assert not chat.is_valid({**CHAT, "temperature": -1})
    generate = _body_validator(document, "/generate")
    generate.validate({"text": "hi", "sampling_params": {"max_new_tokens": 2}})
    assert not generate.is_valid({"text": "hi", "sampling_params": "fast"})
    assert "get" in document["paths"]["/v1/models/{model}"]
