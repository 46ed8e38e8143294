"""report.html renders in headless Chromium from disk with the network disabled.

Heavy: needs Debian's chromium (scripts/install_chromium.sh). Skipped when absent on a user's
machine; fails in CI (CI=true), where the test setup installs it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kimi_runbooks import deploy, invoke, report, speed
from kimi_runbooks.plan import plan
from kimi_runbooks.target import read_handle
from tests.support import FAKE_BENCH, missing

pytestmark = pytest.mark.heavy


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        missing("chromium", "bash scripts/install_chromium.sh")
    return found


def dump_dom(html_path: Path, profile: Path) -> str:
    """The page's DOM after its scripts ran; any network request goes to a dead proxy."""
    argv = [
        _chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--proxy-server=127.0.0.1:9",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--virtual-time-budget=20000",
        "--dump-dom",
        html_path.resolve().as_uri(),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_report_figures_render_offline(tmp_path):
    folder = tmp_path / "run"
    handle = deploy.launch(
        plan({"platform": "mi350x"}), "emulator", folder, progress=False, options={"time_scale": 0.05}
    )
    try:
        target = read_handle(folder)
        invoke.save(invoke.run_all(target, timeout=60), folder)
        speed.run_scenarios(
            speed.select_scenarios("smoke"),
            target,
            folder,
            command_prefix=FAKE_BENCH,
            offline=True,
            progress=False,
            verify_tokens=False,  # the fake client sends no request: nothing to count
            devices=4,
            platform="mi350x",
        )
    finally:
        handle.stop()
    html_path = report.render(folder)
    source = html_path.read_text()
    graphs = len(re.findall(r'class="plotly-graph-div"', source))
    assert graphs >= 3
    dom = dump_dom(html_path, tmp_path / "profile")
    assert dom.count('class="main-svg"') >= graphs  # plotly drew every figure
    assert "Verdict:" in dom and "EMULATED" in dom
