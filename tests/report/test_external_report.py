"""The report of an external run (issue 14, item 7): what is known, nothing that was not used.

Before: "Launch command: sglang serve ... --tp 8", an 8x H200 memory plan and throughput divided
by 8 GPUs for a server whose devices nobody knows. Now: URL, served model, how readiness was
proven, /server_info if any; per-device figures only when the speed stage is given devices.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kimi_runbooks import deploy, report, speed
from kimi_runbooks.emulator.testing import emulator_server
from kimi_runbooks.plan import plan as make_plan
from kimi_runbooks.report import tables as report_tables
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.target.locate import read_handle
from tests.support import FAKE_BENCH
from tests.support.openai_stand_in import StandIn, stand_in_server


def _external_run(base_url: str, path: Path, model: str, devices: int | None) -> None:
    plan = make_plan({"platform": "h200", "served_model_name": model})
    folder = RunFolder.create(path)
    deploy.launch(plan, "external", folder, options={"base_url": base_url}, progress=False)
    target = read_handle(folder)
    memory, platform_devices = speed.platform_capacity("h200", run_dir=path, target=target)
    assert memory is None and platform_devices is None  # no plan of ours describes this server
    speed.run_scenarios(
        speed.select_scenarios(scenarios=["openai-chat-random-ids-c1"]),
        target,
        folder,
        command_prefix=FAKE_BENCH,
        progress=False,
        verify_tokens=False,
        devices=devices,
        platform="h200",
    )
    folder.save_json(folder.runbook, {"launcher": "external", "stages": ["deploy", "speed"]})


@pytest.fixture(scope="module")
def external_run(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("ext") / "run"
    with stand_in_server(StandIn(models=["smollm2-135m"])) as url:
        _external_run(url, folder, "smollm2-135m", devices=None)
    return folder


def test_the_report_shows_what_is_known_about_an_external_server(external_run):
    data = report.collect(RunFolder.of(external_run))
    assert data.external and data.model == "smollm2-135m"
    table = dict(report_tables.external_table(data).values.tolist())
    assert table["served model"] == "smollm2-135m"
    assert table["health checked by"].startswith("/v1/models + one-token generation")
    assert table["launch command"] == "none: the server was started outside this run"
    assert "not available" in table["server_info"]
    row = data.speed.iloc[0]
    assert row["status"] == "ok" and math.isnan(row["output_tok_s_per_gpu"])  # devices unknown: no per-GPU
    assert row["devices"] is None or math.isnan(row["devices"])
    # no plan of ours describes the server: no prediction, and the report says why instead of failing
    assert list(data.predicted["prediction"]) == [
        "no prediction: external server: no plan of this project describes it"
    ]


def test_the_rendered_report_has_no_launch_command_or_memory_plan(external_run):
    html = report.render(RunFolder.of(external_run)).read_text()
    assert "External server (attached, not launched by this run)" in html
    assert "sglang serve" not in html and "--tp 8" not in html
    assert "Memory and KV cache per device" not in html and "kv_pool_tokens" not in html
    assert "hardware (of this machine, not of the external server)" in html


def test_per_device_figures_only_when_devices_are_given(tmp_path):
    with emulator_server(time_scale=0.01, log_startup=False, model="served-x") as url:
        _external_run(url, tmp_path / "run", "served-x", devices=2)
    data = report.collect(RunFolder(tmp_path / "run"))
    row = data.speed.iloc[0]
    assert row["output_tok_s_per_gpu"] == pytest.approx(row["output_throughput"] / 2)
    table = dict(report_tables.external_table(data).values.tolist())
    assert table["health checked by"] == "/health_generate" and "version" in table["server_info"]


def test_a_failed_external_run_reports_only_what_is_known(tmp_path):
    """Issue 25 item 7: the report of an external run where nothing listened said "devices: 8" (the
    plan's H200 node) and diagnosed "the server exited ... read server.log" for a server the run never
    started. It now names the server it was pointed at and the name it asked for, and no device
    count, SGLang version or server-log diagnosis it cannot know."""
    import json

    from kimi_runbooks.report import cards

    folder = RunFolder.create(tmp_path / "run")
    launch = make_plan({"platform": "h200", "served_model_name": "served-x"})
    folder.save_json(folder.plan, launch.as_dict())
    folder.save_json(folder.runbook, {"launcher": "external", "stages": ["deploy", "report"]})
    detail = (
        "DeployTimeout: the server at http://127.0.0.1:9 was not ready after 10s; last check: connect: "
        "connection refused at 127.0.0.1:9: nothing is listening there. Fix: start the server, or correct the port"
    )
    folder.append_jsonl(folder.stages, {"stage": "deploy", "status": "failed", "detail": detail})
    (folder.path / "server.log").write_text("")  # an empty log, as the external launcher may leave
    data = report.collect(folder)
    assert data.external and data.model == "served-x"
    top = cards.top(data)
    assert "devices" not in cards.deploy_card(data)
    assert "The deployment failed" not in top and "server.log" not in top
    assert "unknown (external server)" in cards.header_card(data) and "(planned)" not in top
    assert "External server (NVIDIA H200 parameters)" in top
    assert report.verdict(data).level == "FAIL" and "nothing is listening there" in top
    assert "start the server, or correct the port" in top  # the cause and fix, once, from the stage
    assert json.loads((folder.path / "runbook.json").read_text())["launcher"] == "external"


def test_a_server_without_sglangs_native_api_is_said_once_and_its_native_scenarios_skipped(tmp_path):
    """Issue 25 item 11: against llama.cpp two of the three smoke scenarios died one by one in
    bench_serving's warm-up with `Not Found` (no SGLang /generate). One probe says it once; the
    native-API scenarios are skipped with that reason and the chat-API one still runs."""
    folder = RunFolder.create(tmp_path / "run")
    with stand_in_server(StandIn(models=["smollm2-135m"])) as url:
        deploy.launch(
            make_plan({"platform": "h200", "served_model_name": "smollm2-135m"}),
            "external",
            folder,
            options={"base_url": url},
            progress=False,
        )
        df = speed.run_scenarios(
            speed.select_scenarios("smoke"),
            read_handle(folder),
            folder,
            command_prefix=FAKE_BENCH,
            progress=False,
            verify_tokens=False,
            platform="h200",
        )
    by_id = df.set_index("scenario")
    native = ["smoke-random-ids-c1", "smoke-random-ids-c4"]
    assert list(by_id.loc[native, "status"]) == ["skipped", "skipped"]
    assert all("no SGLang native API" in str(e) for e in by_id.loc[native, "error"])
    assert by_id.loc["smoke-chat-random-ids-c4", "status"] == "ok"
    progress = (folder / "progress.jsonl").read_text()
    assert progress.count("this server has no SGLang native API") == 1


def test_a_failed_external_run_renders_without_figure_machinery(tmp_path):
    """Issue 25 item 7: the report of a failed external run, rendered with the figure renderer left
    unstarted (nothing to draw), still says the cause, the fix and the verdict."""
    folder = RunFolder.create(tmp_path / "run")
    folder.save_json(folder.plan, make_plan({"platform": "h200", "served_model_name": "served-x"}).as_dict())
    folder.save_json(folder.runbook, {"launcher": "external", "stages": ["deploy", "report"]})
    detail = (
        "DeployTimeout: the server at http://127.0.0.1:9 was not ready after 5s; last check: connect: "
        "connection refused at 127.0.0.1:9: nothing is listening there. Fix: start the server, or correct the port"
    )
    folder.append_jsonl(folder.stages, {"stage": "deploy", "status": "failed", "detail": detail})
    html = report.render(folder).read_text()
    assert "nothing is listening there" in html and "start the server, or correct the port" in html
    assert "verdict: FAIL" in html or ">FAIL<" in html
    assert "window.Plotly = Plotly" not in html and "plotly-graph-div" not in html  # nothing drawn, no bundle


def test_the_report_kernel_imports_only_what_a_report_reads():
    """Issue 25 item 7 (every readiness failure ends the runbook within 20 s under load): the report
    kernel of a run with nothing to draw started plotly's notebook renderer (1.1-1.5 s here, ~3 s
    with two CPU hogs) and imported the openai client, the emulator's web app and jupyter_client,
    none of which a report reads. The renderer now starts with the first figure."""
    import subprocess
    import sys

    code = (
        "import sys; from kimi_runbooks import report; report.setup_notebook(); "
        "print(sorted(m for m in ('openai', 'kimi_runbooks.emulator', 'jupyter_client', 'papermill', "
        "'plotly.io._renderers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout


def test_a_failing_external_run_renders_a_report_read_in_a_minute(tmp_path):
    """Issue 40 item 5, on a rendered report: the real stages against a server that is neither SGLang
    nor Kimi (no /generate, no reasoning, no tool calls, response_format ignored). The headline names
    the server's cause, the next steps are at most 8 lines each once and never send the reader to a
    server.log this run does not have, and the speed card says once why the native scenarios were skipped."""
    import re

    from kimi_runbooks import invoke

    folder = RunFolder.create(tmp_path / "run")
    with stand_in_server(StandIn(models=["smollm2-135m"])) as url:
        deploy.launch(
            make_plan({"platform": "h200", "served_model_name": "smollm2-135m"}),
            "external",
            folder,
            options={"base_url": url},
            progress=False,
        )
        target = read_handle(folder)
        options = invoke.InvokeOptions(timeout=30, max_tokens_thinking=64, parallel=1)
        invoke.save(invoke.run_all(target, options), folder)
        speed.run_scenarios(
            speed.select_scenarios("smoke"),
            target,
            folder,
            command_prefix=FAKE_BENCH,
            progress=False,
            verify_tokens=False,
            platform="h200",
        )
    folder.save_json(folder.runbook, {"launcher": "external", "stages": ["deploy", "invoke"]})
    html = report.render(folder).read_text()
    top = html[html.index('<div class="verdict">') : html.index("Feature checks (invoke)")]
    text = re.sub(r"<[^>]+>", "\n", top)
    assert "FAIL" in text and "the server is not SGLang (POST /generate answered 404);" in text
    steps = re.findall(r"<li><b>(.*?)</b> — (.*?)</li>", top.split("What to do next", 1)[1])
    assert 3 <= len(steps) <= 8 and len(set(steps)) == len(steps), steps
    assert "server.log" not in top
    speed_card = top[top.index("<h3>Speed</h3>") : top.index("<h3>Accuracy</h3>")]
    assert speed_card.count("no SGLang native API") == 1, speed_card
