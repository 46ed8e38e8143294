"""The package's shape: one subpackage per stage, no import cycles, no module over the size limit,
and no file written into a run folder except through `rundir.RunFolder` (which redacts)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kimi_runbooks.paths import REPO_ROOT
from kimi_runbooks.stages import STAGES

PACKAGE = REPO_ROOT / "src" / "kimi_runbooks"
MAX_MODULE_LINES = 450
TOOLSCRIPTS = PACKAGE / "tools" / "scripts"
"""Scripts run by the tool environments' own interpreters; not part of the importable package."""

WRITE_METHODS = {"write_text", "write_bytes", "touch", "chmod", "symlink_to", "hardlink_to"}
WRITE_FUNCTIONS = {
    ("json", "dump"),
    ("nbformat", "write"),
    ("shutil", "copy"),
    ("shutil", "copyfile"),
    ("shutil", "copy2"),
    ("shutil", "copytree"),
    ("shutil", "move"),
    ("os", "write"),
    ("os", "rename"),
    ("os", "replace"),
}
WRITERS = {PACKAGE / "rundir" / "__init__.py", PACKAGE / "rundir" / "logs.py", PACKAGE / "rundir" / "atomic.py"}
"""The one package allowed to write files (every other module goes through RunFolder)."""


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if TOOLSCRIPTS in path.parents:
            continue
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules `name` imports: at run time, inside functions (a lazy import hides a cycle, it
    does not remove it) and under TYPE_CHECKING (a type-only circle still ties the modules together:
    neither can be understood, moved or type-checked without the other)."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                elif target in modules:
                    found.add(target)
    found.discard(name)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _import_graph() -> dict[str, set[str]]:
    """Every edge counts, including a package's `__init__` importing its own submodules: then a
    submodule that imports its package back (`from . import name`) closes a circle, as it does when
    Python runs it."""
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def test_import_graph_has_no_cycles() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, f"import cycles: {cycles}"


LAYERS: list[set[str]] = [
    {"paths", "secrets", "rundir", "procs", "progress", "origin", "stages"},
    {"kimi"},
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


def _floor(module: str) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    for level, names in enumerate(LAYERS):
        if part in names:
            return level
    raise AssertionError(f"{module}: its package {part!r} is on no floor of LAYERS; add it where it belongs")


def _upward_edges(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if _floor(b) > _floor(a))


def test_imports_only_point_down() -> None:
    upward = _upward_edges(_import_graph())
    assert not upward, f"imports that run back up a floor (see LAYERS): {upward}"


def test_upward_detector_sees_a_planner_importing_the_model() -> None:
    assert _upward_edges({"kimi_runbooks.plan.view": {"kimi_runbooks.perfmodel"}}) == [
        "kimi_runbooks.plan.view -> kimi_runbooks.perfmodel"
    ]
    assert _upward_edges({"kimi_runbooks.perfmodel": {"kimi_runbooks.plan"}}) == []


def test_graph_counts_type_checking_and_submodule_edges(tmp_path: Path) -> None:
    pkg = tmp_path / "kimi_runbooks" / "p"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import x\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import y\n")
    modules = {"kimi_runbooks.p": pkg / "__init__.py", "kimi_runbooks.p.a": pkg / "a.py"}
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(graph) == [["kimi_runbooks.p", "kimi_runbooks.p.a"]]


def test_top_level_holds_only_the_shared_contracts() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")}
    assert loose <= TOP_LEVEL_MODULES, (
        f"modules beside the packages that are not shared contracts: {sorted(loose - TOP_LEVEL_MODULES)}; "
        "move each into the package of its role (runbook/, target/, tools/, execution/, ...)"
    )
    assert len(loose) <= 10


def test_module_names_do_not_clash() -> None:
    """Two modules share a name only when they play the same role in parallel packages."""
    parallel = {"__init__", "__main__", "cli", "run", "results", "figures", "config", "references"}
    seen: dict[str, list[str]] = {}
    for name, path in _modules().items():
        if path.name == "__init__.py":
            continue  # a package is named by its role; its modules are what may clash
        seen.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    clashes = {leaf: names for leaf, names in seen.items() if len(names) > 1 and leaf not in parallel}
    assert not clashes, f"modules sharing a name for different roles: {clashes}"


def test_cycle_detector_finds_a_cycle() -> None:
    """The detector itself: a cycle through three modules is found, a chain is not."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_one_subpackage_per_stage() -> None:
    for stage in STAGES:
        package = PACKAGE / stage.package.split(".", 1)[1]
        assert (package / "__init__.py").is_file(), f"stage {stage.name}: no package {stage.package}"
        assert (REPO_ROOT / "notebooks" / stage.notebook).is_file(), f"stage {stage.name}: no notebook"
    assert (PACKAGE / "plan" / "__init__.py").is_file()


@pytest.mark.parametrize("name", sorted(_modules()))
def test_module_size(name: str) -> None:
    lines = len(_modules()[name].read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines (limit {MAX_MODULE_LINES}): split it by concern"


def _writes(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if func.attr in WRITE_METHODS or (owner, func.attr) in WRITE_FUNCTIONS:
                found.append(f"{path.name}:{node.lineno} {ast.unparse(func)}")
                continue
        if (isinstance(func, ast.Name) and func.id == "open") or (
            isinstance(func, ast.Attribute) and func.attr == "open"
        ):
            mode = (
                node.args[1]
                if isinstance(func, ast.Name) and len(node.args) > 1
                else (node.args[0] if isinstance(func, ast.Attribute) and node.args else None)
            )
            for kw in node.keywords:
                if kw.arg == "mode":
                    mode = kw.value
            if isinstance(mode, ast.Constant) and isinstance(mode.value, str) and set(mode.value) & set("wax+"):
                found.append(f"{path.name}:{node.lineno} open(mode={mode.value!r})")
    return found


def test_only_rundir_writes_files() -> None:
    offenders = [w for path in _modules().values() if path not in WRITERS for w in _writes(path)]
    assert not offenders, (
        "package code writes files outside rundir.RunFolder (which redacts): "
        f"{offenders}. Fix: use RunFolder.save_text / save_json / append_jsonl / open_log."
    )


def test_whole_files_are_written_only_atomically() -> None:
    """Inside rundir only atomic.py writes a whole file (a temporary file, then os.replace); the rest
    appends (JSONL rows, logs), moves (set_aside) or copies a tree through atomic.copy_file."""
    allowed = ("open(mode='a')", "os.replace", "shutil.copytree")
    writers = [path for path in WRITERS if path.name != "atomic.py"]
    offenders = [w for path in writers for w in _writes(path) if not w.split(" ", 1)[1].startswith(allowed)]
    assert not offenders, f"{offenders}: a whole-file write that a kill could leave cut short. Fix: use rundir.atomic"


def test_write_detector_sees_each_kind_of_write(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import json, shutil\nfrom pathlib import Path\n"
        "Path('x').write_text('k')\nopen('y', 'a')\nPath('z').open(mode='w')\n"
        "json.dump({}, fh)\nshutil.copyfile('a', 'b')\nopen('r')\nPath('q').open()\n"
    )
    assert len(_writes(sample)) == 5


def test_no_test_edits_sys_path() -> None:
    """Tests import the package as installed and their helpers through pytest's rootdir; scripts
    run by another interpreter get their own folder on sys.path from Python itself."""
    tests_dir = REPO_ROOT / "tests"
    edits = [
        f"{path.relative_to(tests_dir)}:{n}"
        for path in sorted(tests_dir.rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"sys\.path\.(insert|append|extend)\(", line) and path.name != "test_layout.py"
    ]
    assert not edits, f"sys.path edited in {edits}"
