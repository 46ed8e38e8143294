"""deploy.launch with the emulator: ready, manifest, teardown, failures diagnosed, keys redacted."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kimi_runbooks import deploy
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.procs import has_live_member
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import read_handle
from tests.support.stand_ins import ipv6_loopback

EMULATOR_FAST = {"time_scale": 0.02, "startup_seconds": 20}
FAST = deploy.LaunchOptions(options=EMULATOR_FAST, progress=False, startup_timeout=60)


def _gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return not has_live_member(pgid)


def _launching_script(run: Path, then: str, imports: str = "") -> str:
    """A Python process that launches the emulator into `run` and then runs `then` (a kernel's life)."""
    return (
        f"{imports}from kimi_runbooks.plan import plan as make_plan\nfrom kimi_runbooks import deploy\n"
        "from kimi_runbooks.rundir import RunFolder\n"
        f"h = deploy.launch(make_plan({{'platform': 'h200'}}), 'emulator', RunFolder.create({str(run)!r}), "
        f"options={{'time_scale': 0.02}}, progress=False)\n{then}"
    )


def _gone_soon(pgid: int, within_s: float = 5) -> bool:
    deadline = time.monotonic() + within_s
    while not _gone(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return _gone(pgid)


def _plan(**kw):
    return make_plan({"platform": "h200", **kw})


def test_launch_ready_manifest_teardown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    # a 2 s start phase (not FAST's 0.4 s), so the 0.25 s readiness poll sees a phase even on a loaded machine
    shown = dataclasses.replace(FAST, options={**EMULATOR_FAST, "startup_seconds": 100})
    with deploy.launch(_plan(), "emulator", RunFolder.of(run, create=True), shown, progress=True) as handle:
        assert httpx.get(handle.base_url + "/health", timeout=5).status_code == 200
        pgid = handle.pgid
        assert pgid and not _gone(pgid)
        assert handle.max_total_num_tokens and handle.max_total_num_tokens > 0
        assert handle.server_info["tp_size"] == 8  # the plan's --tp reached the server
    assert _gone(pgid), "teardown left processes behind"
    out = capsys.readouterr().out
    assert "loading weights" in out or "KV cache" in out or "CUDA graphs" in out
    assert "ready at" in out
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["emulated"] is True and manifest["platform"] == "h200"
    assert manifest["sglang_version"] == "0.5.23-emulated"  # the SGLang the emulator is held to
    assert manifest["max_total_num_tokens"] == handle.max_total_num_tokens
    assert manifest["server_args"]["tp_size"] == 8
    assert manifest["hardware"] == "unavailable" or manifest["hardware"]["tool"]
    assert manifest["packages"]["httpx"]
    assert manifest["run_id"] == "run" and manifest["ready_at"]
    assert "kimi_runbooks.emulator" in manifest["command"]
    h = read_handle(RunFolder.of(run))
    assert h.emulated and h.launcher == "emulator" and h.model == "moonshotai/Kimi-K2.6"
    assert h.max_total_num_tokens == handle.max_total_num_tokens
    assert "Load weight begin" in (run / "server.log").read_text()
    handle.stop()  # idempotent
    assert deploy.teardown_run(RunFolder.of(run)) == []


def test_crash_on_start_is_diagnosed_quickly(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(deploy.DeployError) as err:
        deploy.launch(
            _plan(),
            "emulator",
            RunFolder.create(tmp_path / "run"),
            FAST,
            options={**EMULATOR_FAST, "fault": "crash-on-start"},
        )
    took = time.monotonic() - started
    assert took < 10, f"an early exit must be noticed at once, took {took:.1f}s"
    assert err.value.diagnosis is not None and err.value.diagnosis.kind == "oom"
    text = str(err.value)
    assert "out of accelerator memory" in text and "mem-fraction-static" in text
    assert "CUDA out of memory" in err.value.excerpt  # the log excerpt
    assert "last lines of the server log" in text


def test_slow_start_times_out_naming_the_url(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with pytest.raises(deploy.DeployTimeout) as err:
        deploy.launch(
            _plan(),
            "emulator",
            RunFolder.of(run, create=True),
            # long enough for the emulator's process to import and bind on a loaded 2-core machine (it
            # listens, answering 503, within ~1-3 s), far shorter than its 600 s simulated load
            startup_timeout=8.0,
            progress=False,
            options={"fault": "slow-start=600", "time_scale": 1.0},
        )
    base = json.loads((run / "process.json").read_text())["base_url"]
    assert f"the server at {base} was not ready after 8s" in str(err.value)
    # the emulator, like SGLang, listens early and answers 503 until its model is loaded
    assert "last check: health: GET /health_generate answered HTTP 503" in str(err.value)
    pgid = json.loads((run / "process.json").read_text())["pgid"]
    assert _gone(pgid), "a timed-out launch must be torn down"


@pytest.mark.skipif(not ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_a_misspelt_launch_setting_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"unknown launch setting\(s\) prot\. Fix: one of options, port,"):
        deploy.launch(_plan(), "emulator", RunFolder(tmp_path / "run"), FAST, prot=8000)
    assert not (tmp_path / "run").exists()
    merged = deploy.LaunchOptions.of(FAST, {"progress": True})
    assert merged.progress and merged.startup_timeout == 60 and merged.options == EMULATOR_FAST


def test_launch_on_ipv6_loopback(tmp_path: Path) -> None:
    port = deploy.free_port("::1")  # an IPv6 socket: an IPv4 one cannot bind ::1
    with deploy.launch(_plan(host="::1"), "emulator", RunFolder.create(tmp_path / "run"), FAST) as handle:
        assert handle.base_url.startswith("http://[::1]:")  # bracketed, so it is a usable URL
        assert httpx.get(handle.base_url + "/health", timeout=5).status_code == 200
        assert handle.server_info and handle.server_info["emulated"] is True
    assert port > 0


def test_port_in_use_diagnosed(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(deploy.PreflightError) as refused:
            deploy.launch(_plan(), "emulator", RunFolder.create(tmp_path / "a"), FAST, port=port)
        assert f"port {port} on 127.0.0.1 is in use by pid {os.getpid()}" in str(refused.value)
    # without preflight the server itself fails, and the log says why. The port's holder is bound
    # but not listening: a listener that never answers would hold each readiness probe for its
    # whole timeout (10 s here) before the launcher looked at the exited server again
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        with pytest.raises(deploy.DeployError) as err:
            deploy.launch(_plan(), "emulator", RunFolder.create(tmp_path / "b"), FAST, port=port, preflight=False)
    assert err.value.diagnosis.kind == "port-in-use"
    assert f"port {port} is already in use" in str(err.value)


def test_api_key_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-" + os.urandom(8).hex()
    monkeypatch.setenv("KIMI_TEST_DEPLOY_KEY", key)
    run = tmp_path / "run"
    plan = _plan(api_key_env="KIMI_TEST_DEPLOY_KEY")
    with deploy.launch(plan, "emulator", RunFolder.of(run, create=True), FAST) as handle:
        body = {"model": handle.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
        url = handle.base_url + "/v1/chat/completions"
        assert httpx.post(url, json=body, timeout=30).status_code == 401
        ok = httpx.post(url, json=body, headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert ok.status_code == 200 and ok.json()["choices"]
        assert handle.headers() == {"Authorization": f"Bearer {key}"}
        assert key not in repr(handle) and key not in json.dumps(handle.summary())
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {"manifest.json", "handle.json", "server.log"} <= {p.name for p in files}
    for path in files:
        assert key not in path.read_text(errors="replace"), f"key leaked into {path}"
    assert read_handle(RunFolder.of(run)).api_key_env == "KIMI_TEST_DEPLOY_KEY"


def test_missing_key_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KIMI_UNSET_KEY", raising=False)
    with pytest.raises(deploy.DeployError, match=r"export KIMI_UNSET_KEY="):
        deploy.launch(_plan(api_key_env="KIMI_UNSET_KEY"), "emulator", RunFolder.create(tmp_path / "r"), FAST)


def test_plan_errors_start_nothing(tmp_path: Path) -> None:
    plan = make_plan({"platform": "mi350x", "tp": 8})
    assert plan.errors
    with pytest.raises(deploy.PlanError, match="nothing was started"):
        deploy.launch(plan, "emulator", RunFolder(tmp_path / "r"), FAST)
    assert not (tmp_path / "r").exists()


def test_bind_all_without_key_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with deploy.launch(_plan(host="0.0.0.0"), "emulator", RunFolder.create(tmp_path / "r"), FAST) as handle:
        assert any("bind-all-without-key" in w for w in handle.warnings)
    assert "WARNING: bind-all-without-key" in capsys.readouterr().out
    assert any(
        "bind-all-without-key" in w for w in json.loads((tmp_path / "r" / "manifest.json").read_text())["warnings"]
    )


def test_keep_running_then_teardown_run(tmp_path: Path) -> None:
    run = tmp_path / "run"
    handle = deploy.launch(_plan(), "emulator", RunFolder.of(run, create=True), FAST)
    handle.detach()
    pgid = read_handle(RunFolder.of(run)).model_extra["pgid"]
    assert pgid == handle.pgid and not _gone(pgid)
    done = deploy.teardown_run(RunFolder.of(run))
    handle.process.poll()
    assert done == [f"stopped process group {pgid}"] and _gone(pgid)
    assert deploy.teardown_run(RunFolder.of(run)) == []  # idempotent
    assert json.loads((run / "process.json").read_text())["stopped_at"]


def test_server_survives_the_launching_process_until_teardown_run(tmp_path: Path) -> None:
    """What a papermill kernel with keep_running=True does: launch, detach, exit."""
    run = tmp_path / "run"
    code = _launching_script(run, "h.detach()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    h = read_handle(RunFolder.of(run))
    assert httpx.get(h.base_url + "/health", timeout=5).status_code == 200
    pgid = h.model_extra["pgid"]
    assert deploy.teardown_run(RunFolder.of(run)) == [f"stopped process group {pgid}"]
    assert _gone_soon(pgid)


def test_failed_launching_process_leaves_no_orphan(tmp_path: Path) -> None:
    """atexit: a script (or notebook kernel) that dies after launch takes its server with it."""
    run = tmp_path / "run"
    code = _launching_script(run, "raise SystemExit('cell failed')\n")
    subprocess.run([sys.executable, "-c", code], timeout=60)
    pgid = read_handle(RunFolder.of(run)).model_extra["pgid"]
    assert _gone_soon(pgid)


def test_sigterm_tears_down(tmp_path: Path) -> None:
    run = tmp_path / "run"
    code = _launching_script(run, "print('up', flush=True)\ntime.sleep(60)\n", imports="import time\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    while (line := proc.stdout.readline()) and line.strip() != "up":
        pass
    assert line.strip() == "up"
    pgid = read_handle(RunFolder.of(run)).model_extra["pgid"]
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    assert _gone(pgid)


def test_external_attaches_and_never_stops(tmp_path: Path) -> None:
    with deploy.launch(_plan(), "emulator", RunFolder.create(tmp_path / "owner"), FAST) as owner:
        ext = deploy.launch(
            _plan(),
            "external",
            RunFolder.create(tmp_path / "ext"),
            progress=False,
            options={"base_url": owner.base_url},
        )
        assert ext.server_info and ext.server_info["emulated"] is True
        ext.stop()
        assert httpx.get(owner.base_url + "/health", timeout=5).status_code == 200
        assert read_handle(RunFolder(tmp_path / "ext")).launcher == "external"
        assert deploy.teardown_run(RunFolder(tmp_path / "ext")) == ["external server: not ours to stop"]


def test_local_launcher_runs_in_its_own_process_group(tmp_path: Path) -> None:
    """launcher='local' for real, with the emulator standing in for `sglang serve`."""
    port = deploy.free_port()
    plan = _plan(entrypoint=f"{sys.executable} -m kimi_runbooks.emulator", port=port, env={"KIMI_TEST_MARKER": "1"})
    with deploy.launch(
        plan, "local", RunFolder.create(tmp_path / "run"), preflight=False, progress=False, startup_timeout=60
    ) as handle:
        assert handle.base_url == f"http://127.0.0.1:{port}"
        assert os.getpgid(handle.pid) == handle.pgid == handle.pid != os.getpgid(0)
        env = Path(f"/proc/{handle.pid}/environ").read_bytes().split(b"\0")
        assert b"KIMI_TEST_MARKER=1" in env
        pgid = handle.pgid
    assert _gone(pgid)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["command"].startswith("KIMI_TEST_MARKER=1 ")
