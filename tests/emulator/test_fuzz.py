"""Fuzzing the emulator's POST endpoints: bad input must give 4xx, never 5xx or a dead server.

Hypothesis generates arbitrary JSON values, mutations of valid bodies (fields
replaced by wrong types, huge or negative numbers, fields deleted) and raw bytes.
The server runs with a small context (4096) so a fuzzed-but-valid body cannot ask
for a huge generation, and a tiny time_scale so each request is fast.
"""

from __future__ import annotations

import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kimi_runbooks.emulator import EmulatorSettings
from kimi_runbooks.emulator.testing import run_in_thread

MODEL = "moonshotai/Kimi-K2.6"

VALID = {
    "/v1/chat/completions": {
        "model": MODEL,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "f",
                    "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                },
            }
        ],
    },
    "/v1/completions": {"model": MODEL, "prompt": "hello", "max_tokens": 8},
    "/generate": {"text": "hello", "sampling_params": {"max_new_tokens": 8}},
}
ENDPOINTS = sorted(VALID)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1, 2**31, 10**12, -(10**12), "", "auto", "none", 1e308]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


def _paths(value, prefix=()):
    """Every key path inside a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, prefix + (index,))


def _mutate(body, path, new_value, delete):
    body = json.loads(json.dumps(body))
    if not path:
        return new_value
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = new_value
    return body


@st.composite
def mutated_bodies(draw):
    endpoint = draw(st.sampled_from(ENDPOINTS))
    valid = VALID[endpoint]
    path = draw(st.sampled_from(list(_paths(valid))))
    body = _mutate(valid, path, draw(json_values), draw(st.booleans()))
    if draw(st.booleans()):
        body = _mutate(body, ("stream",), True, False) if isinstance(body, dict) else body
    return endpoint, json.dumps(body).encode()


@st.composite
def random_bodies(draw):
    endpoint = draw(st.sampled_from(ENDPOINTS))
    raw = draw(
        st.one_of(
            json_values.map(lambda v: json.dumps(v).encode()),
            st.binary(max_size=64),
            st.sampled_from(
                [b"", b"{", b"nul", b'{"model": NaN}', b"[[[[[[[[[[", b"\xff\xfe", b'{"text": "\\ud800"}', b"1e999999"]
            ),
        )
    )
    return endpoint, raw


@pytest.fixture(scope="module")
def fuzz_server():
    url, stop = run_in_thread(EmulatorSettings(time_scale=0.001, max_model_len=4096, log_startup=False))
    with httpx.Client(base_url=url, timeout=30) as http:
        yield http
    stop()


def _check(http: httpx.Client, endpoint: str, raw: bytes) -> None:
    response = http.post(endpoint, content=raw, headers={"content-type": "application/json"})
    response.read()
    assert response.status_code < 500, (endpoint, raw[:300], response.text[:300])
    assert response.headers.get("x-emulated") == "kimi-runbooks"
    if response.status_code >= 400:
        err = response.json()
        assert err["object"] == "error" and err["code"] == response.status_code


FUZZ = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(case=mutated_bodies())
def test_mutated_valid_bodies_never_5xx(fuzz_server, case):
    _check(fuzz_server, *case)


@FUZZ
@given(case=random_bodies())
def test_random_bodies_never_5xx(fuzz_server, case):
    _check(fuzz_server, *case)


def test_server_is_healthy_after_fuzzing(fuzz_server):
    assert fuzz_server.get("/health").status_code == 200
    ok = fuzz_server.post("/v1/chat/completions", json=VALID["/v1/chat/completions"])
    assert ok.status_code == 200
