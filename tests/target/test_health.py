"""The readiness chain (target.health), issue 14 items 1 and 5: every cause named with its fix.

Against a stand-in that behaves like llama-cpp-python's server (no /health, a key on /v1/*, any
model name accepted) and the project's emulator (SGLang's /health_generate); the transport
failures (refused, DNS, TLS) against real sockets on this machine.
"""

from __future__ import annotations

import time

import pytest

from kimi_runbooks.deploy import free_port
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.target.health import BaseUrlError, check_server, normalize_base_url
from tests.support.addresses import ADDRESSES, IPV4_RULE, NUMERIC_NON_ADDRESSES
from tests.support.openai_stand_in import StandIn, stand_in_server

# ------------------------------------------------------------------------------- URL


@pytest.mark.parametrize(
    ("given", "root", "noted"),
    [
        ("http://h:30000", "http://h:30000", False),
        ("http://h:30000/", "http://h:30000", False),
        ("http://h:30000/v1", "http://h:30000", True),
        ("http://h:30000/v1/", "http://h:30000", True),
        ("h:30000", "http://h:30000", True),
        ("127.0.0.1:8080/v1", "http://127.0.0.1:8080", True),
        ("https://proxy.example/sglang/v1", "https://proxy.example/sglang", True),
        ("  http://[::1]:30000  ", "http://[::1]:30000", False),
    ],
)
def test_base_url_is_normalised_and_every_change_is_said(given, root, noted):
    got, notes = normalize_base_url(given)
    assert got == root
    assert bool(notes) == noted
    if "://" not in given:
        assert any("no scheme" in n for n in notes)
    if given.rstrip("/ ").endswith("/v1"):
        assert any("/v1" in n for n in notes)


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("", "empty"),
        (":30000", "no host"),
        ("30000", "no host"),
        ("ftp://h:1", "scheme 'ftp'"),
        ("ws://h:1", "scheme 'ws'"),
        ("http://user:pw@h:1", "api_key_env"),
        ("http://h:1/v1/chat/completions", "base_url='http://h:1'"),
        ("http://h:1/?x=1", "query"),
        ("http://a..b:1", "must be an IP address or a host name"),
    ],
)
def test_unusable_base_url_is_refused_with_the_fix(given, words):
    with pytest.raises(BaseUrlError) as err:
        normalize_base_url(given)
    assert words in str(err.value) and "Fix:" in str(err.value)


@pytest.mark.parametrize("host", NUMERIC_NON_ADDRESSES)
def test_a_base_url_host_that_is_no_ip_address_gets_the_plans_address_rule(host):
    """Issue 40 item 3: httpx took `1.2.3`, `127.1` and `0x7f.0.0.1` as host names and refused only
    four-part values, in its own words; now the rule and fix are those of plan --host."""
    with pytest.raises(BaseUrlError) as err:
        normalize_base_url(f"http://{host}:30000")
    assert str(err.value).startswith(f"the host of base_url {IPV4_RULE}") and "Fix:" in str(err.value)


@pytest.mark.parametrize("host", ADDRESSES)
def test_every_address_the_plan_takes_is_a_base_url_host(host):
    shown = f"[{host}]" if ":" in host else host
    assert normalize_base_url(f"http://{shown}:30000")[0] == f"http://{shown}:30000"


# ---------------------------------------------------------------------------- transport


def test_nothing_listening_is_named_and_transient():
    port = free_port()
    result = check_server(f"http://127.0.0.1:{port}", "m", timeout=2)
    assert not result.ok and not result.permanent  # a server may be starting: callers retry
    assert result.failure.name == "connect"
    assert f"connection refused at 127.0.0.1:{port}: nothing is listening there" in result.message()
    assert "Fix: start the server, or correct the port" in result.message()


def test_unknown_host_is_a_dns_failure_at_once():
    start = time.monotonic()
    result = check_server("http://no-such-host.invalid:30000", "m", timeout=5)
    assert result.permanent and result.failure.name == "connect"
    assert "DNS: the host name 'no-such-host.invalid' does not resolve" in result.message()
    assert time.monotonic() - start < 10


def test_https_against_a_plain_server_is_a_tls_failure_naming_http():
    with stand_in_server(StandIn()) as url:
        result = check_server(url.replace("http://", "https://"), "stand-in-model", timeout=5)
    assert result.permanent and "TLS" in result.message()
    assert f"Fix: use http:// instead of https:// in base_url ({url})" in result.message()


# --------------------------------------------------------------------------------- auth


def test_key_problems_name_api_key_env_and_the_fix(monkeypatch):
    server = StandIn(api_key="s3cret-chain-key-55")
    with stand_in_server(server) as url:
        unset = check_server(url, "stand-in-model", api_key_env="CHAIN_TEST_KEY", environ={})
        sent_before_a_key = len(server.requests)
        monkeypatch.setenv("CHAIN_TEST_KEY", "bad-chain-key-value")
        wrong = check_server(url, "stand-in-model", api_key_env="CHAIN_TEST_KEY")
        none = check_server(url, "stand-in-model")
        monkeypatch.setenv("CHAIN_TEST_KEY", "s3cret-chain-key-55")
        good = check_server(url, "stand-in-model", api_key_env="CHAIN_TEST_KEY")
    assert unset.permanent and unset.failure.name == "key"
    assert unset.message() == (
        "key: api_key_env=CHAIN_TEST_KEY but $CHAIN_TEST_KEY is not set. "
        "Fix: export CHAIN_TEST_KEY=<key> before running"
    )
    assert sent_before_a_key == 0  # an unset variable is found before anything is sent
    assert wrong.permanent and wrong.failure.name == "auth"
    assert "HTTP 401 from GET /v1/models: the key in $CHAIN_TEST_KEY was refused" in wrong.message()
    assert "Invalid API key" in wrong.message()
    assert "Fix: export CHAIN_TEST_KEY=<the key the server was started with" in wrong.message()
    assert none.permanent and "no API key was sent" in none.message() and "api_key_env='MY_KEY'" in none.message()
    assert good.ok


# --------------------------------------------------------------------------- model, health


def test_no_health_endpoint_falls_back_to_models_and_a_one_token_generation():
    server = StandIn(models=["smollm2-135m"])
    with stand_in_server(server) as url:
        result = check_server(url + "/v1", "smollm2-135m")
    assert result.ok and result.model == "smollm2-135m"
    assert result.health_method.startswith("/v1/models + one-token generation (/v1/chat/completions;")
    gen = [body for method, path, body in server.requests if path == "/v1/chat/completions"]
    assert gen and gen[0]["max_tokens"] == 1 and len(gen[0]["messages"][0]["content"].split()) > 5  # several tokens
    assert result.as_dict()["health_method"] == result.health_method


def test_sglang_health_generate_is_used_when_present():
    with emulator_server(time_scale=0.01, log_startup=False, model="served-x") as url:
        result = check_server(url, "served-x")
    assert result.ok and result.health_method == "/health_generate"


def test_a_crashing_generation_fails_health_and_says_so():
    with stand_in_server(StandIn(crash_on_generate=True)) as url:
        result = check_server(url, "stand-in-model", timeout=5)
    assert not result.ok and result.failure.name == "health"
    assert "one-token generation" in result.message() and "did the server crash?" in result.message()


def test_the_served_name_is_checked_never_replaced():
    with stand_in_server(StandIn(models=["smollm2-135m"])) as url:
        wrong = check_server(url, "moonshotai/Kimi-K2.6", model_source="served_model_name")
        unnamed = check_server(url, None)
    assert wrong.permanent and wrong.model is None and wrong.failure.name == "model"
    assert "the server serves ['smollm2-135m'], not 'moonshotai/Kimi-K2.6' (served_model_name)" in wrong.message()
    assert "Fix: pass served_model_name='smollm2-135m'" in wrong.message()
    assert unnamed.ok and unnamed.model == "smollm2-135m"
    with stand_in_server(StandIn(models=["a", "b"])) as url:
        several = check_server(url, None)
    assert several.permanent and "several models ['a', 'b']" in several.message()


def test_a_non_openai_server_is_named():
    with stand_in_server(StandIn()) as url:
        result = check_server(url + "/api", "m")
    assert result.permanent and "GET /v1/models answered HTTP 404" in result.message()
