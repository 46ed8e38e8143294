"""Each stage is entered the same way: a few parameters (its knobs travel as one options model or a
small typed group), a RunFolder rather than `str | Path | RunFolder` below the notebook/CLI edge, and
package `__init__` files that export by plain imports.

Each rule is a function in tests/support/stage_entries.py returning its offenders, run on the real
package and on a copy built in tmp_path that breaks it, which it must catch."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.rundir import RunFolder
from kimi_runbooks.stages import STAGES, Stage, entry_point
from tests.support.stage_entries import lazy_export_tables, loose_folder_parameters, wide_entry_points

PACKAGE = REPO_ROOT / "src" / "kimi_runbooks"
STAGE_PACKAGES = [s.package.rsplit(".", 1)[1] for s in STAGES]
MAX_PARAMETERS = 8
EDGE = ["rundir"]
"""Where a path becomes a RunFolder (`RunFolder.of`): the one converter the notebooks and the CLI call."""
TOOLSCRIPTS = PACKAGE / "tools" / "scripts"
"""Scripts (and stand-in packages) run by the tool environments' own interpreters, not the package."""

WIDE_LEFT: set[str] = set()
"""Entry points still over the limit, each to be narrowed (the test fails when one is fixed and
still listed, so the list only shrinks)."""
LOOSE_LEFT: set[str] = set()
"""`str | Path | RunFolder` parameters still to be narrowed to RunFolder (shrinks as WIDE_LEFT does)."""


ENTRY_LEFT: set[str] = set()
"""Work stages whose notebook still drives the stage cell by cell (no registered run(folder, options));
the test fails when one gains an entry and is still listed."""


def _copy(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "kimi_runbooks"
    for rel, source in {"__init__.py": "", **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(source)
    return root


def test_no_stage_entry_point_takes_more_than_eight_parameters() -> None:
    found = set(wide_entry_points(PACKAGE, STAGE_PACKAGES, MAX_PARAMETERS))
    assert found - WIDE_LEFT == set(), "group the knobs into the stage's options model"
    assert WIDE_LEFT - found == set(), "narrowed: drop these from WIDE_LEFT"


def test_wide_entry_points_are_found(tmp_path: Path) -> None:
    """Nine parameters in a stage package count (self and private helpers do not); eight do not."""
    nine = ", ".join(f"p{i}" for i in range(9))
    eight = ", ".join(f"p{i}" for i in range(8))
    root = _copy(
        tmp_path,
        {
            "speed/run.py": f"def wide({nine}): ...\ndef narrow({eight}): ...\ndef _private({nine}): ...\n"
            f"class C:\n    def method(self, {eight}): ...\n",
            "speed/_hidden.py": f"def wide({nine}): ...\n",
            "plan/big.py": f"def wide(*, {nine}): ...\n",
        },
    )
    assert wide_entry_points(root, ["speed"], MAX_PARAMETERS) == ["kimi_runbooks.speed.run:wide (9 parameters)"]


def test_no_function_below_the_edge_takes_a_path_for_a_run_folder() -> None:
    found = set(loose_folder_parameters(PACKAGE, EDGE))
    assert found - LOOSE_LEFT == set(), "take a RunFolder; convert with RunFolder.of at the notebook/CLI edge"
    assert LOOSE_LEFT - found == set(), "narrowed: drop these from LOOSE_LEFT"


def test_loose_folder_parameters_are_found(tmp_path: Path) -> None:
    root = _copy(
        tmp_path,
        {
            "speed/run.py": "def a(folder: str | Path | RunFolder): ...\n"
            "def b(folder: RunFolder | None): ...\n"
            "def c(*, out: 'Path | RunFolder' = None): ...\n",
            "rundir/__init__.py": "def of(folder: str | Path | RunFolder): ...\n",
        },
    )
    assert loose_folder_parameters(root, EDGE) == ["kimi_runbooks.speed.run:a(folder: str | Path | RunFolder)"]


def test_packages_export_by_plain_imports() -> None:
    assert lazy_export_tables(PACKAGE, [TOOLSCRIPTS]) == []


def test_lazy_export_tables_are_found(tmp_path: Path) -> None:
    root = _copy(
        tmp_path,
        {
            "speed/__init__.py": "def __getattr__(name): ...\n",
            "invoke/__init__.py": "from .run import run\n",
        },
    )
    assert lazy_export_tables(root) == ["kimi_runbooks/speed/__init__.py"]


def entry_problems(stage: Stage) -> list[str]:
    """What keeps the stage's registered entry from being `run(folder: RunFolder, options: <X>Options)`
    with the options model defined in the stage's own package."""
    if stage.entry is None:
        return ["no entry registered in STAGES"]
    fn = entry_point(stage.name)
    params = list(inspect.signature(fn).parameters)
    hints = typing.get_type_hints(fn)
    options = hints.get("options")
    problems = []
    if params != ["folder", "options"]:
        problems.append(f"parameters {params}, not ['folder', 'options']")
    if hints.get("folder") is not RunFolder:
        problems.append(f"folder is {hints.get('folder')}, not RunFolder")
    if not (isinstance(options, type) and options.__name__.endswith("Options")):
        problems.append(f"options is {options}, not a <Stage>Options model")
    elif not options.__module__.startswith(stage.package):
        problems.append(f"{options.__name__} lives in {options.__module__}, outside {stage.package}")
    return problems


@pytest.mark.parametrize("stage", [s for s in STAGES if s.result_file], ids=lambda s: s.name)
def test_each_work_stage_has_one_entry_taking_a_folder_and_its_options(stage: Stage) -> None:
    problems = entry_problems(stage)
    if stage.name in ENTRY_LEFT:
        assert problems == ["no entry registered in STAGES"], f"{stage.name} has an entry now: drop it from ENTRY_LEFT"
    else:
        assert problems == [], f"{stage.name}: {problems}"


def test_a_misshapen_entry_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry with loose parameters, or options that are not the stage's model, is named."""
    import kimi_runbooks.invoke.stage as invoke_stage

    def loose(run_dir: str, timeout: float) -> None: ...

    def foreign(folder: RunFolder, options: RunFolder) -> None: ...

    invoke = next(s for s in STAGES if s.name == "invoke")
    monkeypatch.setattr(invoke_stage, "run", loose)
    assert entry_problems(invoke) == [
        "parameters ['run_dir', 'timeout'], not ['folder', 'options']",
        "folder is None, not RunFolder",
        "options is None, not a <Stage>Options model",
    ]
    monkeypatch.setattr(invoke_stage, "run", foreign)
    assert entry_problems(invoke) == ["options is <class 'kimi_runbooks.rundir.RunFolder'>, not a <Stage>Options model"]
    assert entry_problems(Stage("x", "x.ipynb", "x.json", "kimi_runbooks.x", "")) == ["no entry registered in STAGES"]
