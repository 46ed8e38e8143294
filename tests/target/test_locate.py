"""runinfo's shared server look-ups: one /server_info fetch, one target resolution, one label.

Real answers come from the emulator; the few answers it never gives (a 404 with a JSON body, HTML,
a JSON list, only the old /get_server_info path) come from a tiny stdlib server on 127.0.0.1.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kimi_runbooks import invoke, speed
from kimi_runbooks.accuracy import runner
from kimi_runbooks.deploy import free_port
from kimi_runbooks.emulator.settings import EmulatorSettings
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.origin import source_label
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target import locate as target
from kimi_runbooks.target.locate import RunHandle, write_handle

SERVED = "served-under-another-name"


class _Fake:
    """path -> (status, content type, body); every request's Authorization header is kept."""

    def __init__(self, routes: dict[str, tuple[int, str, str]]):
        self.routes, self.auth = routes, []

    def __enter__(self) -> str:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake.auth.append(self.headers.get("Authorization"))
                status, ctype, body = fake.routes.get(self.path, (404, "application/json", '{"detail":"Not Found"}'))
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _json(doc) -> tuple[int, str, str]:
    return 200, "application/json", json.dumps(doc)


@pytest.fixture
def keyed_emulator(monkeypatch) -> Iterator[str]:
    monkeypatch.setenv("RUNINFO_TEST_KEY", "sk-runinfo-test")
    profile = dataclasses.replace(EmulatorSettings().profile, max_total_num_tokens=4321)
    with emulator_server(
        time_scale=0.01, log_startup=False, model=SERVED, api_key="sk-runinfo-test", profile=profile
    ) as url:
        yield url


# ---------------------------------------------------------------- fetch_server_info


def test_fetch_server_info_from_the_emulator_with_and_without_the_key(keyed_emulator):
    info = target.fetch_server_info(keyed_emulator + "/", "sk-runinfo-test")  # trailing slash is fine
    assert info is not None and info["emulated"] is True and info["max_total_num_tokens"] == 4321
    assert target.fetch_server_info(keyed_emulator) is None  # 401 without the key: no live info


def test_fetch_server_info_falls_back_to_the_old_path():
    with _Fake({"/get_server_info": _json({"max_total_num_tokens": 99, "emulated": True})}) as url:
        info = target.fetch_server_info(url, "k-1")
    assert info == {"max_total_num_tokens": 99, "emulated": True}


@pytest.mark.parametrize(
    "route", [(200, "text/html", "<html>proxy</html>"), _json([1, 2]), (500, "application/json", '{"emulated": true}')]
)
def test_fetch_server_info_is_none_for_anything_but_a_json_object(route):
    with _Fake({"/server_info": route, "/get_server_info": route}) as url:
        assert target.fetch_server_info(url) is None


def test_fetch_server_info_is_none_when_nothing_listens():
    assert target.fetch_server_info(f"http://127.0.0.1:{free_port()}", timeout=2) is None


def test_bearer_header_only_with_a_key():
    fake = _Fake({"/server_info": _json({"a": 1})})
    with fake as url:
        target.fetch_server_info(url, "k-2")
        target.fetch_server_info(url)
    assert fake.auth == ["Bearer k-2", None]


def test_accuracy_server_facts_follow_the_shared_fetch(tmp_path):
    # /server_info answers 404 with a JSON body, the old path says emulated; the handle has a
    # trailing slash. The accuracy stage used to read the 404 body and call this "measured".
    routes = {"/get_server_info": _json({"emulated": True}), "/v1/models": _json({"data": [{"id": SERVED}]})}
    with _Fake(routes) as url:
        facts = runner.server_facts(RunHandle(base_url=url + "/", model="", launcher="external"))
    assert facts == {"model": SERVED, "emulated": True, "rehearsal": False}


def test_probes_and_bench_read_emulated_from_the_shared_fetch(keyed_emulator):
    handle = RunHandle(base_url=keyed_emulator, model=SERVED, launcher="external", api_key_env="RUNINFO_TEST_KEY")
    assert invoke.detect_emulated(handle, timeout=5) is True
    live = speed.live_server_info(keyed_emulator, "sk-runinfo-test")
    assert live is not None and live.emulated and live.max_total_num_tokens == 4321 and live.dp_ranks == 1


# ---------------------------------------------------------------- resolve_target


def test_base_url_without_model_asks_the_server_for_its_served_name(keyed_emulator, tmp_path):
    for resolve in (target.resolve_target, speed.resolve_target):
        handle = resolve(None, base_url=keyed_emulator + "/v1", api_key_env="RUNINFO_TEST_KEY", platform="h200")
        assert handle.model == SERVED  # not a guessed default name
        assert handle.base_url == keyed_emulator and handle.launcher == "external" and handle.platform == "h200"
    assert invoke.resolve_target(base_url=keyed_emulator, api_key_env="RUNINFO_TEST_KEY").model == SERVED
    options = runner.AccuracyOptions(base_url=keyed_emulator, api_key_env="RUNINFO_TEST_KEY")
    assert runner.resolve_server(RunFolder(tmp_path), options).model == SERVED


def test_base_url_without_model_and_no_answer_names_the_cause_and_fix():
    with pytest.raises(
        ValueError, match=r"connection refused at 127.0.0.1:\d+: nothing is listening there. Fix: start"
    ):
        speed.resolve_target(None, base_url=f"http://127.0.0.1:{free_port()}")


def test_base_url_without_model_and_a_refused_key_names_api_key_env(keyed_emulator, monkeypatch):
    """Issue 14 item 6: a 401 names the key's variable and how to set it, never "pass model"."""
    monkeypatch.setenv("RUNINFO_TEST_KEY", "sk-wrong")
    with pytest.raises(ValueError) as err:
        target.resolve_target(None, base_url=keyed_emulator, api_key_env="RUNINFO_TEST_KEY")
    text = str(err.value)
    assert "HTTP 401" in text and "the key in $RUNINFO_TEST_KEY was refused" in text
    assert "Fix: export RUNINFO_TEST_KEY=" in text and "pass model" not in text and "sk-wrong" not in text
    with pytest.raises(ValueError, match=r"no API key was sent.*Fix: export MY_KEY=.*api_key_env='MY_KEY'"):
        target.resolve_target(None, base_url=keyed_emulator)
    monkeypatch.delenv("RUNINFO_TEST_KEY")
    with pytest.raises(RuntimeError, match=r"\$RUNINFO_TEST_KEY, which is not set. Fix: export RUNINFO_TEST_KEY="):
        target.resolve_target(None, base_url=keyed_emulator, model="m", api_key_env="RUNINFO_TEST_KEY")


def test_an_explicit_model_is_taken_as_given_without_asking():
    fake = _Fake({})
    with fake as url:
        handle = target.resolve_target(None, base_url=url, model="m-given")
    assert handle.model == "m-given" and fake.auth == []


def test_run_dir_handle_with_overrides(tmp_path):
    with pytest.raises(FileNotFoundError, match="deploy stage"):
        target.resolve_target(RunFolder(tmp_path))
    with pytest.raises(ValueError, match="run_dir"):
        target.resolve_target(None)
    write_handle(
        RunFolder.create(tmp_path),
        RunHandle(base_url="http://h:1", model="m", launcher="emulator", emulated=True, platform="h200"),
    )
    assert target.resolve_target(RunFolder(tmp_path)) == target.read_handle(RunFolder(tmp_path))
    handle = target.resolve_target(RunFolder(tmp_path), model="m2", api_key_env="K", platform="mi350x")
    assert (handle.model, handle.api_key_env, handle.platform, handle.emulated) == ("m2", "K", "mi350x", True)


# ---------------------------------------------------------------- source_label


def test_source_label():
    assert source_label(True) == "emulated" and source_label(False) == "measured"
    assert source_label(True, upper=True) == "EMULATED"
    assert source_label(False, upper=True) == "measured"  # only the warning shouts
    assert source_label(False, "r1") == "measured (run r1)"
    assert source_label(True, "r2", upper=True) == "EMULATED (run r2)"
