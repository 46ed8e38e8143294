"""A runbook's next stage kernel starts while the current stage runs and a finished one exits
behind it (execution/kernel_handoff.py): each notebook still runs in a fresh kernel of its own,
in the run folder, and no kernel outlives the handoff."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat

from kimi_runbooks.execution.kernel_handoff import KernelHandoff, notebook_kernel
from kimi_runbooks.execution.notebook import execute_notebook


def _notebook(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import os\nprint(os.getpid(), os.getcwd())")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


def _printed(path: Path) -> tuple[int, str]:
    out = json.loads(path.read_text())["cells"][0]["outputs"][0]["text"]
    pid, cwd = "".join(out).split()
    return int(pid), cwd


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_each_notebook_runs_in_the_kernel_started_ahead_for_it_in_the_run_folder(tmp_path: Path):
    first, second = _notebook(tmp_path / "first.ipynb"), _notebook(tmp_path / "second.ipynb")
    run = tmp_path / "run"
    run.mkdir()
    kernels = KernelHandoff(run)
    kernels.prestart(first)
    kernels.prestart(second)  # meanwhile, as the runbook does for the next stage
    pids = []
    for source in (first, second):
        km = kernels.take(source)
        assert km is not None and km.provisioner is not None
        started_pid = km.provisioner.process.pid
        execute_notebook(source, tmp_path / f"out-{source.name}", kernel_manager=km, cwd=run)
        pid, cwd = _printed(tmp_path / f"out-{source.name}")
        assert pid == started_pid and cwd == str(run)
        kernels.release(km)
        pids.append(pid)
    kernels.close()
    assert pids[0] != pids[1]  # a fresh kernel per notebook
    assert not any(_alive(pid) for pid in pids)


def test_a_kernel_that_died_ahead_is_not_handed_out_and_an_untaken_one_is_stopped(tmp_path: Path):
    source, spare = _notebook(tmp_path / "a.ipynb"), _notebook(tmp_path / "b.ipynb")
    kernels = KernelHandoff(tmp_path)
    kernels.prestart(source)
    kernels.prestart(spare)
    dead = kernels._ahead[str(source)].result()
    dead.provisioner.process.kill()
    dead.provisioner.process.wait()
    assert kernels.take(source) is None  # papermill then starts its own
    spare_pid = kernels._ahead[str(spare)].result().provisioner.process.pid
    kernels.close()
    assert not _alive(spare_pid)


def test_the_kernel_is_the_one_the_notebook_names_unless_the_runbook_names_one(tmp_path: Path):
    path = _notebook(tmp_path / "a.ipynb")
    assert notebook_kernel(path) == "python3"
    assert notebook_kernel(path, "kimi-runbooks-speed") == "kimi-runbooks-speed"
