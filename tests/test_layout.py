"""The package's shape: one subpackage per stage, no import cycles, no import up a floor, no module
over the size limit, and no file written into a run folder except through `rundir.RunFolder` (which
redacts), by the package or by the programs it runs.

Each rule is a function in tests/support (layout, file_writes) that returns its offenders; each is
run on the real package and on a small copy built in tmp_path that breaks it, which it must catch."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.stages import STAGES, Stage
from tests.support.file_writes import file_writes, tool_outputs
from tests.support.layout import (
    Role,
    cycles,
    emulator_imports,
    import_graph,
    loose_modules,
    module_imports,
    name_clashes,
    oversized_modules,
    package_modules,
    stages_without_home,
    sys_path_edits,
    upward_edges,
)

PACKAGE = REPO_ROOT / "src" / "kimi_runbooks"
MAX_MODULE_LINES = 450
Build = Callable[[dict[str, str]], Path]
"""The `broken_copy` fixture: modules (path -> source) -> the package folder holding them."""
TOOLSCRIPTS = PACKAGE / "tools" / "scripts"
"""Scripts run by the tool environments' own interpreters; not part of the importable package."""

LAYERS: list[set[str]] = [
    {"paths", "secrets", "rundir", "procs", "progress", "origin", "stages"},
    {"kimi"},
    {"catalog", "cookbook"},
    {"plan", "target", "tools", "execution"},
    {"perfmodel"},
    {"emulator", "deploy"},
    {"invoke", "speed", "accuracy"},
    {"report", "generator"},
    {"runbook", "cli", "__init__"},
]
"""The package's floors, bottom first: a module may import its own floor or any floor below it,
never one above (the planner knows nothing of predictions; the prediction nothing of the emulator
that replays it; the report nothing of the runbook that renders it)."""

TOP_LEVEL_MODULES = {"__init__", "cli", "stages", "rundir", "secrets", "procs", "progress", "origin", "paths"}
"""The shared contracts and the console script; everything else lives in a package named by its role."""

EMULATOR = "kimi_runbooks.emulator"
EMULATOR_RUNNERS = {
    "kimi_runbooks.cli": "`kimi-runbooks emulator` runs the emulator's own CLI in this process",
}
"""The only modules outside emulator/ that may import it: those that run it. The deploy stage's
launcher starts it as a process (`python -m kimi_runbooks.emulator`, deploy/launchers/emulator.py)
and imports nothing of it; a stage that needs Kimi's formats or the counting tokenizer reads kimi/,
as the emulator does, so no stage depends on the test double."""

ROLES: dict[str, Role] = {
    "__main__": Role("`python -m` entry of its package", (r"(def|import) main\b.*",)),
    "cli": Role("the command line of its package: main(argv)", (r"def main -> .*",)),
    "config": Role("the options model of its package", (r"class [A-Z]\w*Config",)),
    "options": Role("a stage's options model", (r"class [A-Z]\w*Options",)),
    "stage": Role("a stage's one entry, registered in STAGES", (r"def run -> .*",)),
    "references": Role(
        "published references beside this run's rows", (r"def reference_frame -> .*", r"def compare -> .*")
    ),
    "results": Role("a stage's results, and the error raised when they failed", (r"def raise_if_failed -> .*",)),
    "run": Role("runs its package's work", (r"def run_\w+ -> .*",)),
    "figures": Role("plotly figures", (r"def [a-z]\w* -> go\.Figure",)),
}
"""Module names that more than one package uses, each for one role. Two modules share a name only
when the name is declared here, both sit at the top or directly in a top-level package, and each
defines what its role requires (`Role.shows`). The check sees definitions, not intent: it catches a
`config.py` that holds no options model, not one whose options model means something else."""

WRITERS = {PACKAGE / "rundir" / "__init__.py", PACKAGE / "rundir" / "logs.py", PACKAGE / "rundir" / "atomic.py"}
"""The one package allowed to write files (every other module goes through RunFolder)."""
WRITE_EXCEPTIONS = {
    PACKAGE / "cookbook" / "kept.py": "`kimi-runbooks cookbook sync` regenerates the checkout's "
    "params/cookbook/generated (source data a maintainer reviews and commits); no run folder exists",
    PACKAGE / "cookbook" / "sync.py": "`kimi-runbooks cookbook sync` keeps a page revision in the "
    "checkout's params/cookbook (sources/ and sources.yaml); no run folder exists",
    PACKAGE / "emulator" / "testing.py": "a test harness: start_subprocess opens a temporary file for the "
    "emulator's stderr (read back when it fails to start); no run folder exists",
}

TOOL_OUTPUT_EXCEPTIONS = {
    "kimi_runbooks.accuracy.inspect_eval:run": "job.out_dir is the suite's folder in the run folder "
    "(SuiteContext.job: folder.accuracy_work / name); ToolJob.writer() opens a RunFolder on it",
    "kimi_runbooks.accuracy.sgl_eval:run": "job.out_dir, as for inspect_eval.run",
    "kimi_runbooks.accuracy.vendor_verifier:run_k2vv": "job.out_dir, as for inspect_eval.run",
    "kimi_runbooks.deploy.launchers.process:start_process": "handle.log_path is the run folder's "
    "server log (deploy/start.py: folder.server_log; launchers/slurm.py: ctx.folder.server_log)",
    "kimi_runbooks.deploy.launchers.behind_router:start_fleet": "handle.log_path, as for "
    "process.start_process; the other logs are ctx.folder.member_log / ctx.folder.logs",
    "kimi_runbooks.emulator.testing:start_subprocess": "a test harness: the emulator's stderr goes to a "
    "temporary file read back when it fails to start; no run folder exists",
    "kimi_runbooks.execution.prewarm:start_if_asked": "a kernel's prewarmed bench worker, started "
    "before any run folder exists; its log is a temporary file",
    "kimi_runbooks.speed.aiperf:profile_args": "no stage runs AIPerf; tests/peers and benchmarks/ "
    "call it with a folder of their own",
}
"""Functions whose tool output paths the detector cannot trace to a RunFolder, and why they are fine."""


@pytest.fixture
def broken_copy(tmp_path: Path) -> Build:
    """A package `kimi_runbooks` in tmp_path with the given modules (path -> source), each folder
    a package; returns the package folder."""

    def build(files: dict[str, str]) -> Path:
        root = tmp_path / "kimi_runbooks"
        for rel, source in {"__init__.py": "", **files}.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            for folder in [path.parent, *path.parent.parents]:
                if folder == tmp_path:
                    break
                (folder / "__init__.py").touch()
            path.write_text(source)
        return root

    return build


def _graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE, [TOOLSCRIPTS])


def test_import_graph_has_no_cycles() -> None:
    found = cycles(_graph())
    assert not found, f"import cycles: {found}"


def test_cycle_detector_finds_a_cycle(broken_copy: Build) -> None:
    """A circle through a lazy import and a TYPE_CHECKING import is found; a chain is not."""
    root = broken_copy(
        {
            "plan/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import x\n",
            "plan/b.py": "def f():\n    from . import c\n",
            "plan/c.py": "from .a import y\n",
            "plan/d.py": "from .a import y\n",
        }
    )
    assert cycles(import_graph(root)) == [["kimi_runbooks.plan.a", "kimi_runbooks.plan.b", "kimi_runbooks.plan.c"]]


def test_graph_counts_a_package_importing_its_submodule(broken_copy: Build) -> None:
    root = broken_copy({"p/__init__.py": "from .a import x\n", "p/a.py": "from . import y\n"})
    assert cycles(import_graph(root)) == [["kimi_runbooks.p", "kimi_runbooks.p.a"]]


def test_imports_only_point_down() -> None:
    upward = upward_edges(_graph(), LAYERS)
    assert not upward, f"imports that run back up a floor (see LAYERS): {upward}"


def test_upward_detector_sees_a_planner_importing_the_model(broken_copy: Build) -> None:
    root = broken_copy(
        {"plan/view.py": "from ..perfmodel import predict\n", "perfmodel/predict.py": "from ..plan import view\n"}
    )
    assert upward_edges(import_graph(root), LAYERS) == ["kimi_runbooks.plan.view -> kimi_runbooks.perfmodel.predict"]


def test_no_stage_imports_the_emulator() -> None:
    found = emulator_imports(_graph(), EMULATOR, EMULATOR_RUNNERS)
    assert not found, (
        f"modules outside emulator/ that import it: {found}. Fix: take what they need from kimi/ (Kimi's "
        "formats, the counting tokenizer and its files); only a module that runs the emulator (EMULATOR_RUNNERS) "
        "may import it"
    )


def test_emulator_import_detector_sees_a_lazy_stage_import(broken_copy: Build) -> None:
    """A stage importing the emulator inside a function (as invoke/kvv.py did) is found; the
    emulator's own modules and the console script are not."""
    root = broken_copy(
        {
            "emulator/tokenizer.py": "from ..kimi import tokenizer\n",
            "kimi/tokenizer.py": "",
            "invoke/kvv.py": "def count():\n    from ..emulator.tokenizer import count_tokens\n",
            "cli.py": "def main():\n    from .emulator import tokenizer\n",
        }
    )
    found = emulator_imports(import_graph(root), EMULATOR, EMULATOR_RUNNERS)
    assert found == ["kimi_runbooks.invoke.kvv -> kimi_runbooks.emulator.tokenizer"]


def test_top_level_holds_only_the_shared_contracts() -> None:
    loose = loose_modules(PACKAGE, TOP_LEVEL_MODULES)
    assert not loose, (
        f"modules beside the packages that TOP_LEVEL_MODULES does not list (or listed and gone): {loose}; "
        "move each into the package of its role (runbook/, target/, tools/, execution/, ...)"
    )


def test_loose_module_detector_sees_a_new_module_and_a_stale_name(broken_copy: Build) -> None:
    root = broken_copy({"cli.py": "", "helpers.py": ""})
    assert loose_modules(root, {"__init__", "cli", "paths"}) == [
        "helpers",
        "paths (named in the table, not in the package)",
    ]


def test_module_names_do_not_clash() -> None:
    clashes = name_clashes(PACKAGE, ROLES, [TOOLSCRIPTS])
    assert not clashes, f"modules sharing a name without sharing a role (see ROLES): {clashes}"


def test_clash_detector_sees_two_roles_under_one_name(broken_copy: Build) -> None:
    """Two `config` modules where one holds no options model, an undeclared shared name, and a
    declared name nested below a package are found; two real options models are not."""
    root = broken_copy(
        {
            "plan/config.py": "class PlanConfig: ...\n",
            "accuracy/config.py": "class AccuracyConfig: ...\n",
            "emulator/config.py": "PORT = 30000\n",
            "speed/helpers.py": "",
            "deploy/helpers.py": "",
            "report/figures.py": "import plotly.graph_objects as go\ndef pareto() -> go.Figure: ...\n",
            "deploy/launchers/figures.py": "import plotly.graph_objects as go\ndef bars() -> go.Figure: ...\n",
        }
    )
    assert name_clashes(root, ROLES) == [
        r"kimi_runbooks.emulator.config: its role is 'the options model of its package' but it has no top-level "
        r"'class [A-Z]\\w*Config'",
        "kimi_runbooks.deploy.launchers.figures: a shared name nested below a top-level package",
        "helpers: ['kimi_runbooks.deploy.helpers', 'kimi_runbooks.speed.helpers'] share a name and ROLES "
        "declares no role for it",
    ]


def test_one_subpackage_per_stage() -> None:
    missing = stages_without_home(STAGES, PACKAGE, REPO_ROOT / "notebooks")
    assert not missing, f"stages without their package or notebook: {missing}"


def test_stage_detector_sees_a_missing_package_and_notebook(broken_copy: Build) -> None:
    root = broken_copy({"invoke/run.py": ""})
    notebooks = root.parent / "notebooks"
    notebooks.mkdir()
    (notebooks / "invoke.ipynb").write_text("{}")
    stages = [
        Stage("invoke", "invoke.ipynb", None, "kimi_runbooks.invoke", ""),
        Stage("speed", "speed_bench.ipynb", None, "kimi_runbooks.speed", ""),
    ]
    assert stages_without_home(stages, root, notebooks) == [
        "speed: no package kimi_runbooks.speed",
        "speed: no notebook speed_bench.ipynb",
    ]


def test_module_size() -> None:
    over = oversized_modules(PACKAGE, MAX_MODULE_LINES, [TOOLSCRIPTS])
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}. Fix: split each by concern"


def test_size_detector_sees_a_long_module(broken_copy: Build) -> None:
    root = broken_copy({"plan/long.py": "x = 1\n" * 11, "plan/short.py": "x = 1\n" * 10})
    assert oversized_modules(root, 10) == ["kimi_runbooks.plan.long has 11 lines"]


def test_only_rundir_writes_files() -> None:
    offenders = [
        w
        for path in package_modules(PACKAGE, [TOOLSCRIPTS]).values()
        if path not in WRITERS | set(WRITE_EXCEPTIONS)
        for w in file_writes(path)
    ]
    assert not offenders, (
        "package code writes files outside rundir.RunFolder (which redacts): "
        f"{offenders}. Fix: use RunFolder.save_text / save_json / append_jsonl / open_log."
    )


ATOMIC_WRITER = "atomic.py"
IN_PLACE_ALLOWED = ("open(mode='a')", "os.fdopen", "os.replace", "shutil.copytree")
"""Inside rundir, what is not a whole-file write: appends (JSONL rows, logs), a descriptor opened
(the write end of a log's pipe), the rename that ends an atomic write or a move (set_aside), and a
tree copied through atomic.copy_file."""


def in_place_writes(paths: list[Path]) -> list[str]:
    """Whole-file writes outside rundir/atomic.py: a kill during one leaves a cut-short file."""
    return [
        w
        for path in paths
        if path.name != ATOMIC_WRITER
        for w in file_writes(path)
        if not w.split(" ", 1)[1].startswith(IN_PLACE_ALLOWED)
    ]


def test_whole_files_are_written_only_atomically() -> None:
    offenders = in_place_writes(sorted(WRITERS))
    assert not offenders, f"{offenders}: a whole-file write that a kill could leave cut short. Fix: use rundir.atomic"


def test_in_place_write_detector_sees_a_plain_write_text(broken_copy: Build) -> None:
    root = broken_copy(
        {
            "rundir/__init__.py": "def save(p, s):\n    p.write_text(s)\n\ndef add(p):\n    open(p, 'a')\n",
            "rundir/atomic.py": "def write(p, s):\n    p.write_text(s)\n",
        }
    )
    found = in_place_writes([root / "rundir" / "__init__.py", root / "rundir" / "atomic.py"])
    assert found == ["__init__.py:2 p.write_text"]


def test_write_detector_sees_each_kind_of_write(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json, os, shutil\nfrom pathlib import Path\n"
        "Path('x').write_text('k')\nopen('y', 'a')\nPath('z').open(mode='w')\n"
        "json.dump({}, fh)\nshutil.copyfile('a', 'b')\nos.fdopen(fd, 'w')\n"
        "open('r')\nPath('q').open()\nos.fdopen(fd, 'rb')\n"
    )
    assert [w.split(" ", 1)[0] for w in file_writes(sample)] == [f"sample.py:{n}" for n in (3, 4, 5, 6, 7, 8)]


def test_programs_the_package_runs_write_only_into_run_folders() -> None:
    """Papermill's executed notebook, a file given as a subprocess's stdout/stderr, and the path
    after a tool's output flag (--output-file, --out-dir, --log-dir, ...) must be a RunFolder path:
    a call or attribute on a RunFolder (`folder.notebook(name)`, `folder.logs / "x.log"`), that path
    wrapped, or a parameter every caller in the package fills with one (TOOL_OUTPUT_EXCEPTIONS
    names the few functions where that cannot be traced, and why they are fine)."""
    modules = package_modules(PACKAGE, [TOOLSCRIPTS])
    stale = [key for key in TOOL_OUTPUT_EXCEPTIONS if key.split(":")[0] not in modules]
    assert not stale, f"TOOL_OUTPUT_EXCEPTIONS names modules that are gone: {stale}"
    offenders = tool_outputs(modules, TOOL_OUTPUT_EXCEPTIONS)
    assert not offenders, (
        f"programs told to write outside a run folder: {offenders}. Fix: pass a path from the RunFolder "
        "(folder.notebook(...), folder.bench_output(...), folder.logs / name), so what they write is "
        "where the run folder redacts and finds it"
    )


def test_tool_output_detector_sees_writes_outside_the_run_folder(broken_copy: Build) -> None:
    """Found: a notebook executed into /tmp, a stdout file and an --out-dir f-string on a plain
    path, bench_serving's --output-file from a plain path two calls up, and an output parameter no
    caller fills. Not found: the same paths from a RunFolder."""
    root = broken_copy(
        {
            "execution/notebook.py": (
                "import papermill as pm\n"
                "def execute_notebook(source, dest):\n    return pm.execute_notebook(str(source), str(dest))\n"
            ),
            "report/html.py": (
                "from ..execution.notebook import execute_notebook\n"
                "def render(folder, source):\n    execute_notebook(source, folder.notebook('report.ipynb'))\n"
                "def draft(source):\n    execute_notebook(source, '/tmp/report.ipynb')\n"
            ),
            "speed/argv.py": "def build_argv(scenario, output_file):\n    return ['--output-file', str(output_file)]\n",
            "speed/run.py": (
                "import subprocess\nfrom pathlib import Path\nfrom .argv import build_argv\n"
                "def run_one(scenario, run):\n"
                "    out = run.folder.bench_output(scenario)\n"
                "    subprocess.run(build_argv(scenario, out))\n"
                "def run_loose(scenario):\n"
                "    work = Path('/tmp/bench')\n"
                "    with (work / 'bench.log').open('w') as log:\n"
                "        subprocess.run(['x'], stdout=log, stderr=subprocess.STDOUT)\n"
                "    with folder.open_log('bench.log') as kept:\n"
                "        subprocess.run(['x'], stdout=kept)\n"
                "    subprocess.run(['sgl-eval', f'--out-dir={work}'])\n"
                "def run_given(scenario, work: Path):\n"
                "    subprocess.run(build_argv(scenario, output_file=work / 'bench.jsonl'))\n"
                "def main(scenario):\n"
                "    run_given(scenario, Path.home())\n"
                "def orphan(out):\n"
                "    subprocess.run(['inspect', '--log-dir', out])\n"
            ),
        }
    )
    found = tool_outputs(package_modules(root), {})
    assert found == [
        "kimi_runbooks.report.html:draft:5 papermill's executed notebook is \"'/tmp/report.ipynb'\", not a "
        "RunFolder path",
        "kimi_runbooks.speed.run:main:17 passes 'Path.home()' as run_given(work=...), which becomes a tool's "
        "--output-file: not a RunFolder path",
        "kimi_runbooks.speed.run:orphan(out) becomes a tool's --log-dir, and no caller in the package passes it",
        "kimi_runbooks.speed.run:run_loose:10 a subprocess's stdout is 'log', not a RunFolder path",
        "kimi_runbooks.speed.run:run_loose:13 a tool's --out-dir is 'work', not a RunFolder path",
    ]


def test_no_test_edits_sys_path() -> None:
    """Tests import the package as installed and their helpers through pytest's rootdir; scripts
    run by another interpreter get their own folder on sys.path from Python itself."""
    edits = sys_path_edits(REPO_ROOT / "tests")
    assert not edits, f"sys.path edited in {edits}"


def test_sys_path_detector_sees_each_edit(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text(
        "import sys\nsys.path.insert(0, 'x')\nsys.path.append('y')\nsys.path[:] = []\nsys.path = ['z']\n"
        "sys.path.extend(['w'])\nnote = 'sys.path.insert(0, here)'\nsys.modules.pop('a')\n"
    )
    assert sys_path_edits(tmp_path) == [f"test_a.py:{n}" for n in (2, 3, 4, 5, 6)]


def test_graph_reads_relative_imports(broken_copy: Build) -> None:
    """The graph's edges: `from ..x import y` resolves to the module y when it is one, else to x."""
    root = broken_copy({"a/b.py": "from ..c import d, e\nfrom . import f\n", "c/d.py": "", "a/f.py": ""})
    modules = package_modules(root)
    assert module_imports("kimi_runbooks.a.b", root / "a" / "b.py", modules) == {
        "kimi_runbooks.c.d",
        "kimi_runbooks.c",
        "kimi_runbooks.a.f",
    }
