"""The layout rules of tests/test_layout.py as functions: each takes a package root (or its import
graph) and returns its offenders, so a test can run it on the real package and on a small copy
that breaks it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kimi_runbooks.stages import Stage


def package_modules(root: Path, skip: Iterable[Path] = ()) -> dict[str, Path]:
    """Dotted name -> file for every module under `root` (the package folder), minus `skip` folders."""
    skipped = [s.resolve() for s in skip]
    out = {}
    for path in sorted(root.rglob("*.py")):
        if any(s in path.resolve().parents for s in skipped):
            continue
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def module_imports(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """Project modules `name` imports: at run time, inside functions (a lazy import hides a cycle, it
    does not remove it) and under TYPE_CHECKING (a type-only circle still ties the modules together:
    neither can be understood, moved or type-checked without the other)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
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


def import_graph(root: Path, skip: Iterable[Path] = ()) -> dict[str, set[str]]:
    """Every edge counts, including a package's `__init__` importing its own submodules: then a
    submodule that imports its package back (`from . import name`) closes a circle, as it does when
    Python runs it."""
    modules = package_modules(root, skip)
    return {name: module_imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
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


def floor(module: str, layers: Sequence[set[str]]) -> int:
    part = module.split(".")[1] if "." in module else "__init__"
    for level, names in enumerate(layers):
        if part in names:
            return level
    raise AssertionError(f"{module}: its package {part!r} is on no floor of LAYERS; add it where it belongs")


def upward_edges(graph: Mapping[str, set[str]], layers: Sequence[set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if floor(b, layers) > floor(a, layers))


def emulator_imports(graph: Mapping[str, set[str]], emulator: str, runners: Iterable[str]) -> list[str]:
    """Edges into `emulator` (or below it) from modules that are neither in it nor in `runners`."""

    def inside(module: str) -> bool:
        return module == emulator or module.startswith(emulator + ".")

    allowed = set(runners)
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        if not inside(a) and a not in allowed
        for b in targets
        if inside(b)
    )


def loose_modules(root: Path, allowed: set[str]) -> list[str]:
    """Modules beside the packages that `allowed` does not name, and names in `allowed` that no
    longer exist (a stale table would let a new module take a vacated name unseen)."""
    loose = {p.stem for p in root.glob("*.py")}
    present = loose | {p.parent.name for p in root.glob("*/__init__.py")}
    gone = sorted(allowed - present)
    return sorted(loose - allowed) + [f"{name} (named in the table, not in the package)" for name in gone]


@dataclass(frozen=True)
class Role:
    """What every module of one shared name does, and the top-level definitions that say so: each
    pattern must fully match one of the module's `def NAME -> RETURNS`, `class NAME` or `import NAME`."""

    does: str
    shows: tuple[str, ...]


def _definitions(path: Path) -> list[str]:
    out = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append(f"def {node.name} -> {ast.unparse(node.returns) if node.returns else ''}")
        elif isinstance(node, ast.ClassDef):
            out.append(f"class {node.name}")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out += [f"import {a.asname or a.name.split('.')[-1]}" for a in node.names]
    return out


def name_clashes(root: Path, roles: Mapping[str, Role], skip: Iterable[Path] = ()) -> list[str]:
    """A module name used twice must be declared in `roles`; every module of that name must sit at
    the top or directly in a top-level package (parallel places, never nested deeper) and define
    what its role's patterns require."""
    by_leaf: dict[str, list[str]] = {}
    modules = package_modules(root, skip)
    for name, path in modules.items():
        if path.name != "__init__.py":  # a package is named by its role; its modules are what may clash
            by_leaf.setdefault(name.rsplit(".", 1)[-1], []).append(name)
    out = []
    for leaf, names in sorted(by_leaf.items()):
        if len(names) < 2:
            continue
        role = roles.get(leaf)
        if role is None:
            out.append(f"{leaf}: {names} share a name and ROLES declares no role for it")
            continue
        for name in names:
            if name.count(".") > 2:
                out.append(f"{name}: a shared name nested below a top-level package")
            defined = _definitions(modules[name])
            for pattern in role.shows:
                if not any(re.fullmatch(pattern, d) for d in defined):
                    out.append(f"{name}: its role is '{role.does}' but it has no top-level {pattern!r}")
    return out


def stages_without_home(stages: Iterable[Stage], package_root: Path, notebooks: Path) -> list[str]:
    """Stages whose package (a folder with __init__.py under the package root) or notebook is missing."""
    out = []
    for stage in stages:
        package = package_root.joinpath(*stage.package.split(".")[1:])
        if not (package / "__init__.py").is_file():
            out.append(f"{stage.name}: no package {stage.package}")
        if not (notebooks / stage.notebook).is_file():
            out.append(f"{stage.name}: no notebook {stage.notebook}")
    return out


def oversized_modules(root: Path, limit: int, skip: Iterable[Path] = ()) -> list[str]:
    sizes = {name: len(path.read_text().splitlines()) for name, path in package_modules(root, skip).items()}
    return [f"{name} has {n} lines" for name, n in sizes.items() if n > limit]


SYS_PATH_EDITS = {"insert", "append", "extend", "remove", "clear", "pop", "__setitem__"}


def sys_path_edits(folder: Path) -> list[str]:
    """Calls that change sys.path (sys.path.insert(...), ...) and assignments to it (sys.path = ...,
    sys.path[:] = ...), found in the syntax tree so a string that mentions one is not counted."""
    out: list[tuple[str, int]] = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr in SYS_PATH_EDITS:
                    targets = [node.func.value]
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                assigned = node.targets if isinstance(node, ast.Assign) else [node.target]
                targets = [t.value if isinstance(t, ast.Subscript) else t for t in assigned]
            if any(ast.unparse(t) == "sys.path" for t in targets) and isinstance(node, ast.stmt | ast.expr):
                out.append((str(path.relative_to(folder)), node.lineno))
    return [f"{name}:{line}" for name, line in sorted(out)]
