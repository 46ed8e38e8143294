"""speed_bench.ipynb executes headlessly (fake bench client, emulator), labels and resumes."""

from __future__ import annotations

import nbformat
import pytest

from kimi_runbooks.emulator.testing import start_subprocess
from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.rundir import RunFolder, read_jsonl
from kimi_runbooks.target.locate import RunHandle, write_handle
from tests.support import FAKE_BENCH, clean_code_cells, run_notebook

pytestmark = pytest.mark.slow  # end to end: `make test-all` and CI run it, `make test` leaves it out

ROOT = REPO_ROOT
FAKE = FAKE_BENCH


def _text(nb) -> str:
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            out.append(o.get("text", ""))
            out.append(str(o.get("data", {}).get("text/plain", "")))
            out.append(str(o.get("data", {}).get("text/html", ""))[:200000])
    return "\n".join(out)


def test_notebook_is_committed_clean_and_parameterized():
    clean_code_cells(ROOT / "notebooks/speed_bench.ipynb", max_lines=16, first_checked=1)


def test_notebook_runs_against_the_emulator(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with start_subprocess(["--profile", "h200", "--time-scale", "0.01"]) as emu:
        write_handle(
            RunFolder.of(run_dir, create=True),
            RunHandle(
                base_url=emu.base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200", emulated=True
            ),
        )
        params = {
            "run_dir": str(run_dir),
            "scenarios": ["chat-1k1k-c1", "chat-1k1k-c16", "matrix-ctx8k-c1"],
            "command_prefix": FAKE,
            "tokenizer": "unused-by-fake",
            "timeout_s": 60,
            "verify_tokens": False,  # the fake client sends nothing: no token counts to check
        }
        out = tmp_path / "out.ipynb"
        run_notebook(
            str(ROOT / "notebooks/speed_bench.ipynb"),
            str(out),
            parameters=params,
        )
        text = _text(nbformat.read(out, as_version=4))
        assert "EMULATED" in text and "emulated" in text
        assert "reference: SGLang cookbook" in text
        assert "output_throughput ratio" in text
        # no deploy stage wrote a plan here: the prediction cell says so instead of failing
        assert "0 of 3 scenario(s) outside the prediction band" in text
        assert "no prediction: no plan" in text  # pandas shortens the rest of the reason
        rows = read_jsonl(run_dir / "bench.jsonl")
        assert [r["status"] for r in rows] == ["ok", "ok", "ok"]
        # a second execution resumes: nothing is run again
        run_notebook(
            str(ROOT / "notebooks/speed_bench.ipynb"),
            str(out),
            parameters=params,
        )
        assert len(read_jsonl(run_dir / "bench.jsonl")) == 3


def test_notebook_repeats_a_scenario_and_shows_its_interval(tmp_path):
    """Issue 28 item 5: `repeats` reaches SpeedOptions; one row per repeat; the summary cell shows the interval."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with start_subprocess(["--profile", "h200", "--time-scale", "0.01"]) as emu:
        handle = RunHandle(base_url=emu.base_url, model="moonshotai/Kimi-K2.6", launcher="emulator", platform="h200")
        write_handle(RunFolder.of(run_dir, create=True), handle)
        params = {
            "run_dir": str(run_dir),
            "scenarios": ["chat-1k1k-c1"],
            "command_prefix": FAKE,
            "tokenizer": "unused-by-fake",
            "timeout_s": 60,
            "verify_tokens": False,
            "repeats": 2,
        }
        out = tmp_path / "out.ipynb"
        run_notebook(str(ROOT / "notebooks/speed_bench.ipynb"), str(out), parameters=params)
    assert [(r["repeat"], r["repeats"]) for r in read_jsonl(run_dir / "bench.jsonl")] == [(1, 2), (2, 2)]
    assert "mean of 2 runs, 95% interval" in _text(nbformat.read(out, as_version=4))  # pandas shortens the rest
