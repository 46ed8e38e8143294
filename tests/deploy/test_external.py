"""launcher='external' (issue 14, items 1 and 5): a server someone else runs is checked fast, with
the real cause and its fix, and its served name is checked, never replaced.

The servers: a stand-in that behaves like llama-cpp-python's (no /health, a key on /v1/*) and
the project's emulator; the runbook cases run the real runbook (papermill, the deploy notebook)
and measure how long it takes to stop.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from kimi_runbooks import deploy, runbook
from kimi_runbooks.deploy import ServerHandle, free_port, wait_ready
from kimi_runbooks.deploy.launchers.external import EXTERNAL_STARTUP_TIMEOUT
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import read_handle
from tests.support.openai_stand_in import StandIn, stand_in_server

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

KEY_ENV = "EXTERNAL_TEST_KEY"


def _plan(**kw):
    return make_plan({"platform": "h200", "served_model_name": "smollm2-135m", **kw})


def test_a_server_without_health_is_ready_in_seconds_and_says_how(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "s3cret-ext-key-2931")
    with stand_in_server(StandIn(models=["smollm2-135m"], api_key="s3cret-ext-key-2931")) as url:
        handle = deploy.launch(
            _plan(api_key_env=KEY_ENV),
            "external",
            RunFolder.create(tmp_path / "run"),
            options={"base_url": url},
        )
    # Ready on its own clock, inside the external timeout (the launch's wall time also covers the
    # manifest, which starts each tool env once: seconds on a cold CI disk, not a readiness figure).
    ready = re.search(r"\[\s*([0-9.]+)s\] ready at ", out := capsys.readouterr().out)
    assert ready and float(ready.group(1)) < EXTERNAL_STARTUP_TIMEOUT
    assert handle.model == "smollm2-135m" and handle.base_url == url
    method = "/v1/models + one-token generation (/v1/chat/completions; /health_generate and /health are absent)"
    assert handle.readiness and handle.readiness["health_method"] == method
    assert read_handle(RunFolder(tmp_path / "run")).readiness["health_method"] == method  # for the report
    assert f"waiting for {url} to be ready" in out and f"ready at {url}: health via {method}" in out
    assert "[pass] auth: GET /v1/models answered 200 with the key" in out  # preflight, before readiness


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        ("wrong-key", ["auth: HTTP 401", f"the key in ${KEY_ENV} was refused", f"Fix: export {KEY_ENV}="]),
        ("unset-key", [f"api_key_env={KEY_ENV} but ${KEY_ENV} is not set", f"Fix: export {KEY_ENV}=<key>"]),
        ("no-key", ["no API key was sent", "api_key_env='MY_KEY'"]),
        ("wrong-model", ["the server serves ['smollm2-135m'], not 'moonshotai/Kimi-K2.6'", "served_model_name"]),
    ],
)
def test_what_waiting_cannot_fix_stops_before_anything_starts(setup, words, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "bad-ext-key-value-77" if setup == "wrong-key" else "s3cret-ext-key-2931")
    if setup == "unset-key":
        monkeypatch.delenv(KEY_ENV)
    knobs = {} if setup == "no-key" else {"api_key_env": KEY_ENV}
    if setup == "wrong-model":
        knobs["served_model_name"] = "moonshotai/Kimi-K2.6"
    with stand_in_server(StandIn(models=["smollm2-135m"], api_key="s3cret-ext-key-2931")) as url:
        with pytest.raises(deploy.DeployError) as err:
            deploy.launch(
                _plan(**knobs),
                "external",
                RunFolder.create(tmp_path / "run"),
                options={"base_url": url},
                progress=False,
            )
    assert not isinstance(err.value, deploy.DeployTimeout)  # stopped at once, never waited out the timeout
    for word in words:
        assert word in str(err.value)
    assert "bad-ext-key-value-77" not in str(err.value)  # the key's value is never shown


def test_nothing_listening_stops_after_a_short_wait_with_a_heartbeat(tmp_path, capsys):
    port = free_port()
    start = time.monotonic()
    with pytest.raises(deploy.DeployTimeout) as err:
        deploy.launch(
            _plan(),
            "external",
            RunFolder.create(tmp_path / "run"),
            options={"base_url": f"127.0.0.1:{port}/v1"},
        )
    took = time.monotonic() - start
    assert EXTERNAL_STARTUP_TIMEOUT <= took < EXTERNAL_STARTUP_TIMEOUT + 5
    text = str(err.value)
    assert f"connection refused at 127.0.0.1:{port}: nothing is listening there" in text
    assert "Fix: start the server, or correct the port in base_url" in text
    out = capsys.readouterr().out
    assert "has no scheme: using http://" in out and "ended in /v1" in out
    beats = [line for line in out.splitlines() if "waiting; connect: connection refused" in line]
    assert len(beats) >= 3  # a line every few seconds, not silence until the timeout


def test_an_unusable_url_is_refused_before_anything_else(tmp_path):
    with pytest.raises(deploy.DeployError, match=r"scheme 'ftp'.*Fix: http://host:port"):
        deploy.launch(_plan(), "external", RunFolder.create(tmp_path / "run"), options={"base_url": "ftp://h:1"})
    with pytest.raises(deploy.DeployError, match=r"needs base_url"):
        deploy.launch(_plan(), "external", RunFolder.create(tmp_path / "run2"))


def test_readiness_checks_the_served_name_for_every_launcher_and_never_replaces_it(tmp_path):
    """Before issue 14, wait_ready overwrote handle.model with the first /v1/models id."""
    with emulator_server(time_scale=0.01, log_startup=False, model="served-x") as url:
        handle = ServerHandle(
            launcher="emulator",
            folder=RunFolder.create(tmp_path / "run"),
            base_url=url,
            platform="h200",
            model="what-the-plan-says",
            owns=False,
        )
        with pytest.raises(deploy.DeployError, match=r"serves \['served-x'\], not 'what-the-plan-says'"):
            wait_ready(handle, timeout=5, progress=False)
        assert handle.model == "what-the-plan-says"
        handle.model = "served-x"
        wait_ready(handle, timeout=5, progress=False)
        assert handle.model == "served-x" and handle.readiness["health_method"] == "/health_generate"


# --------------------------------------------------------------- the runbook, end to end


def _runbook(base_url: str, run_dir: Path, **extra) -> tuple[float, str | None]:
    params = {
        "platform": "h200",
        "launcher": "external",
        "base_url": base_url,
        "served_model_name": "served-x",
        "api_key_env": KEY_ENV,
        "stages": ["deploy", "report"],
        "run_dir": str(run_dir),
        **extra,
    }
    start = time.monotonic()
    try:
        runbook.run_runbook(params)
        error = None
    except runbook.RunbookFailed as exc:
        error = str(exc)
    return time.monotonic() - start, error


@pytest.mark.parametrize("case", ["nothing-listening", "no-scheme", "trailing-v1", "wrong-key", "unset-key"])
def test_the_external_runbook_stops_within_30s_naming_cause_and_fix(case, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv(KEY_ENV, "bad-ext-key-value-77" if case == "wrong-key" else "s3cret-ext-key-2931")
    if case == "unset-key":
        monkeypatch.delenv(KEY_ENV)
    with emulator_server(time_scale=0.01, log_startup=False, model="served-x", api_key="s3cret-ext-key-2931") as url:
        base = {
            "nothing-listening": f"http://127.0.0.1:{free_port()}",
            "no-scheme": url.removeprefix("http://"),
            "trailing-v1": url + "/v1/",
        }.get(case, url)
        took, error = _runbook(base, tmp_path / "run")
    out = capfd.readouterr().out
    print(f"{case}: the runbook ended after {took:.1f}s")
    assert took < (20 if case == "nothing-listening" else 30)  # issue 25 item 7: 20 s, report included
    assert "[runbook] deploy: " in out  # the stage's progress shows in the runbook's output as it happens
    if case in ("no-scheme", "trailing-v1"):
        assert error is None, error
        assert ("has no scheme: using http://" if case == "no-scheme" else "ended in /v1") in out
        assert read_handle(RunFolder(tmp_path / "run")).base_url == url
        return
    assert error is not None
    expected = {
        "nothing-listening": ["connection refused", "nothing is listening there", "Fix: start the server"],
        "wrong-key": ["HTTP 401", f"the key in ${KEY_ENV} was refused", f"Fix: export {KEY_ENV}="],
        "unset-key": [f"api_key_env={KEY_ENV} but ${KEY_ENV} is not set", f"Fix: export {KEY_ENV}="],
    }[case]
    for word in expected:
        assert word in error, (word, error)
    if case == "nothing-listening":
        assert "waiting; connect: connection refused" in out  # the heartbeat, relayed
