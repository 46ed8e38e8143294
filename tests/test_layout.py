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
TOOLSCRIPTS = PACKAGE / "toolscripts"
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
WRITERS = {PACKAGE / "rundir.py"}
"""The one module allowed to write files (every other module goes through RunFolder)."""


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


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Project modules `name` imports at run time (TYPE_CHECKING blocks excluded; function-level
    imports included: a lazy import hides a cycle, it does not remove it)."""
    tree = ast.parse(path.read_text())
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rsplit(".", 1)[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    # A package's __init__ importing its own submodules is how packages work; a submodule
    # importing its own package back is the cycle this test is about, so only that edge stays.
    for name in graph:
        graph[name] = {
            t
            for t in graph[name]
            if not (t.startswith(name + ".") and (PACKAGE.parent / name.replace(".", "/")).is_dir())
        }
    return graph


def test_import_graph_has_no_cycles() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, f"import cycles: {cycles}"


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
